export const CLIENT_SCHEMA: string;
export const CLIENT_CODES: string;
export function clientSchemaText(document?: string): Promise<string>;
export function committedClientSchema(): string;
export function clientCodesText(
	catalogue: Record<string, { status: number; subcode: number; description: string }>,
): string;
export function committedClientCodes(): string;
