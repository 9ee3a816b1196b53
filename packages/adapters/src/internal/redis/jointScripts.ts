/**
 * The Lua scripts of a joint admission (`joint.ts`): a budget reservation and a permit of a pool on
 * the same Redis, taken together or not at all, and settled together (one script, one round trip
 * each way). The budget part is `budgetScripts.ts`'s, the permit part `permitScripts.ts`'s, with
 * the same keys and semantics. A single Redis node only (the keys of two hash slots).
 *
 * @internal
 */
import { reserveFunctions, settleFunction } from "./budgetScripts.js"
import { common } from "./permitScripts.js"
import { script } from "./script.js"

/**
 * KEYS: account hash, reservation set, pool hash, lease set, lease hash, the epoch key (optional).
 * ARGV: id, amount, limit, now, expiresAt, accountExpiresAt (as `reserve`); key, lease id, lease
 * ms, reserved, max, shared, channel (as `acquire`); a new epoch, `1` to write it when missing.
 * Returns `{status, committed, reserved, epoch}`: status 1 both taken, 0 the budget refused, 2 no
 * permit free (nothing taken in either case).
 *
 * The permit is checked first (without taking it), then the budget: a refused permit never
 * reserves, a refused budget never takes a permit. (`purge` below is the permit pool's: the budget
 * functions bound their own before it.)
 *
 * @internal
 */
export const admit = script(`${reserveFunctions}${common}
local h, z = KEYS[1], KEYS[2]
local ph, pz, info = KEYS[3], KEYS[4], KEYS[5]
local epoch = read_epoch(KEYS[6], ARGV[14], ARGV[15])
local key, lease = ARGV[7], ARGV[8]
local leaseMs, reserved, max, shared = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local now = now_ms()
purge_waking(ph, pz, info, now, ARGV[13])
local pv = redis.call('HMGET', ph, 'k:' .. key, 's')
local held = tonumber(pv[1] or '0')
local free = held < max
if free and held >= reserved then free = tonumber(pv[2] or '0') < shared end
local status, c, r, e = budget_check(h, z, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[6])
if status == 0 then return {0, c, r, epoch} end
if not free then return {2, c, r, epoch} end
if status == 1 then
  budget_take(h, z, ARGV[1], ARGV[2], ARGV[4], ARGV[5], ARGV[6], e)
  r = r + tonumber(ARGV[2])
end
if held >= reserved then redis.call('HINCRBY', ph, 's', 1) end
redis.call('HINCRBY', ph, 'k:' .. key, 1)
redis.call('ZADD', pz, string.format('%d', now + leaseMs), lease)
redis.call('HSET', info, lease, ARGV[10] .. '\\n' .. key)
return {1, c, r, epoch}
`)

/**
 * KEYS: account hash, reservation set, pool hash, lease set, lease hash. ARGV: id, spend, limit,
 * retry (as `settle`); lease id, channel (as `release`). Settles the reservation and gives the
 * permit back; returns `{committed, overspent}`.
 *
 * @internal
 */
export const settleAndRelease = script(`${settleFunction}${common}
local out = budget_settle(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local freed = free(KEYS[3], KEYS[5], ARGV[5])
redis.call('ZREM', KEYS[4], ARGV[5])
if freed and tonumber(redis.call('HGET', KEYS[3], 'w') or '0') > 0 then redis.call('PUBLISH', ARGV[6], '') end
return out
`)

/**
 * KEYS: as `admit`'s first five. ARGV: id, lease id, channel. Gives back what an `admit` whose
 * answer was lost may have taken (either may be absent: ignored).
 *
 * @internal
 */
export const undo = script(`${settleFunction}${common}
budget_settle(KEYS[1], KEYS[2], ARGV[1], '0', '0', '1')
local freed = free(KEYS[3], KEYS[5], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[2])
if freed and tonumber(redis.call('HGET', KEYS[3], 'w') or '0') > 0 then redis.call('PUBLISH', ARGV[3], '') end
return 1
`)
