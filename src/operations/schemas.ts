import { z } from "zod";

export const DESCRIPTION_KEY = /^[a-z_][0-9a-z_]{0,63}$/;

export const uuid = z.uuid({ version: "v4", error: "Must be a UUID" });

export const description = z.record(
	z.string().regex(DESCRIPTION_KEY, "Keys must match ^[a-z_][0-9a-z_]{0,63}$"),
	z.json(),
);

// A timestamp in the API's format; null where the interface allows "never".
export const timestamp = z.number().finite().nonnegative();
