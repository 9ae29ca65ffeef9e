export const SERVED: string;
export const DEFAULT_ORIGIN: string;
export function writeServed(origin: string, file?: string): void;
export function readServed(file?: string): string | undefined;
export function clearServed(file?: string): void;
export function findServer(url?: string, file?: string): string;
