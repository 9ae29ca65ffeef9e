import type { ChildProcess, SpawnOptions } from "node:child_process";
export const quietEnv: Record<string, string | undefined>;
export function wrangler(args: string[], options?: SpawnOptions): ChildProcess;
export function wranglerDone(args: string[], options?: SpawnOptions): Promise<void>;
export function applyMigrations(options?: { persistTo?: string; bindings?: string[] }): Promise<Record<string, number>>;
export function describeMigrations(applied: Record<string, number>): string;
export function countMigrations(output: string): number;
