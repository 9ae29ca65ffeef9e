export function openApiText(): string;
