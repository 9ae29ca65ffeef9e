// wrangler.toml as wrangler itself reads it, so that the deploy plans with what wrangler deploys.
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";

export function readConfig() {
	return experimental_readRawConfig({ config: fileURLToPath(new URL("../../wrangler.toml", import.meta.url)) })
		.rawConfig;
}
