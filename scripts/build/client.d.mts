export const CLIENT_SCHEMA: string;
export function clientSchemaText(document?: string): Promise<string>;
export function committedClientSchema(): string;
