// The parts of wrangler.toml the plan reads, as wrangler's raw config reader returns them.
export interface DeployConfig {
	name: string;
	workers_dev?: boolean;
	vars?: Record<string, unknown>;
	secrets?: { required?: string[] };
	d1_databases?: { binding: string; database_name?: string }[];
	queues?: { producers?: { queue: string }[]; consumers?: { queue: string; dead_letter_queue?: string }[] };
}

export interface DeployFacts {
	queues: string[];
	secrets: string[] | null;
	databases: string[];
	subdomain?: string;
}

export function queuesOf(config: DeployConfig): string[];
export function chooseAccount(accounts: { id: string; name: string }[], named?: string): string;
export function needsSubdomain(config: DeployConfig, publicUrl?: string): boolean;
export function publicOrigin(config: DeployConfig, publicUrl?: string, subdomain?: string): string | undefined;
export function planDeploy(
	config: DeployConfig,
	facts: DeployFacts,
	options?: { publicUrl?: string },
): { steps: string[][]; secrets: string[]; origin: string | undefined };
