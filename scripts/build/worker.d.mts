import type { Metafile } from "esbuild";

export const OUT: string;
export function buildWorker(options?: { write?: boolean }): Promise<Metafile>;
export function compiledAtStartup(metafile: Metafile): string[];
