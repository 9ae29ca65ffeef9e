import type { DeployConfig } from "./plan.mjs";

export function readConfig(): DeployConfig & { account_id?: string };
