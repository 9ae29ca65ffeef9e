import type { ChildProcess, SpawnOptions } from "node:child_process";
export const quietEnv: Record<string, string | undefined>;
export function wrangler(args: string[], options?: SpawnOptions): ChildProcess;
export function wranglerDone(args: string[], options?: SpawnOptions): Promise<void>;
export function applyMigrations(options?: { persistTo?: string }): Promise<number>;
export function countMigrations(output: string): number;
