import { DurableObject } from "cloudflare:workers";

// One object per account, addressed by the account uuid. It is where an account's writes
// that must not interleave are serialized.
export class AccountDO extends DurableObject<Env> {}
