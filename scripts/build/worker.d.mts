import type { Metafile } from "esbuild";

export function buildWorker(options?: { write?: boolean }): Promise<Metafile>;
export function compiledAtStartup(metafile: Metafile): string[];
