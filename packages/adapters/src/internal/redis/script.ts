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

/**
 * `spread(z, h)`: once sorted set `z` reaches 32 members, adds a member scored `+inf` and a field
 * `~` to hash `h`, each 80 bytes long. Redis keeps small hashes and sorted sets in a compact
 * encoding (listpack, up to 128 entries of up to 64 bytes by default) whose every lookup scans the
 * whole key: with tens of live reservations or leases each access cost several microseconds of the
 * server's time. An entry longer than 64 bytes moves the key to Redis' hashed encoding for the rest
 * of its life (O(1) field access); the member scored `+inf` is never read as expired, and keeps the
 * set alive (it expires with its account, or stays with its pool). Keys that never hold 32 entries
 * at once stay compact.
 *
 * @internal
 */
export const spreadFunction = `
local function spread(z, h)
  if redis.call('ZCARD', z) == 32 then
    local pad = string.rep('~', 80)
    redis.call('ZADD', z, '+inf', pad)
    redis.call('HSET', h, '~', pad)
  end
end
`
