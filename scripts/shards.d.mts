import type { DeployConfig } from "./deploy/plan.mjs";

export function declaredShards(config: Pick<DeployConfig, "d1_databases">): string[];
export function checkShards(config: Pick<DeployConfig, "d1_databases" | "vars">, shards?: unknown): string[];
