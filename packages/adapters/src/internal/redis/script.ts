/**
 * A Lua script of the Redis stores, with its SHA-1 (run with `EVALSHA`, falling back to `EVAL` once
 * when the server does not know it yet). Each store operation is one script, run atomically by
 * Redis in one round trip.
 *
 * Numbers are written back with `string.format('%d', n)`: Redis turns a Lua number argument into
 * text with `%.14g`, which would give `1e+15` for large amounts. Amounts are integers below 2^53,
 * exact as Lua numbers.
 *
 * @internal
 */
import { createHash } from "node:crypto"

/** @internal */
export interface Script {
  readonly lua: string
  readonly sha: string
}

/** @internal */
export const script = (lua: string): Script => ({ lua, sha: createHash("sha1").update(lua).digest("hex") })
