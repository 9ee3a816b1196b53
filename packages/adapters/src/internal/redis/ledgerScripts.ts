/**
 * The Lua scripts of the Redis `ToolLedgerStore`.
 *
 * @internal
 */
import { script } from "./script.js"

/**
 * Tool ledger record layout: hash with `m` (the JSON of key, runId, step, index, tool, startedAt),
 * `s` (status), `c` (completedAt), `r` (the JSON of the encoded result). A run's records are a
 * sorted set of their keys scored by a claim sequence.
 *
 * KEYS: record hash, run set, sequence counter. ARGV: meta JSON, retention ms, the record's key.
 * Returns `{}` when claimed, else the existing `{m, s, c, r}`.
 *
 * @internal
 */
export const ledgerClaim = script(`
local h, run, seq = KEYS[1], KEYS[2], KEYS[3]
if redis.call('HSETNX', h, 'm', ARGV[1]) == 0 then
  return redis.call('HMGET', h, 'm', 's', 'c', 'r')
end
redis.call('HSET', h, 's', 'started')
redis.call('PEXPIRE', h, ARGV[2])
redis.call('ZADD', run, redis.call('INCR', seq), ARGV[3])
redis.call('PEXPIRE', run, ARGV[2])
return {}
`)

/**
 * KEYS: record hash. ARGV: encoded result JSON (`''` for none), completedAt.
 *
 * @internal
 */
export const ledgerComplete = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 's', 'completed', 'c', ARGV[2])
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'r', ARGV[1]) end
return 1
`)

/**
 * KEYS: record hash, run set. ARGV: the record's key. Drops a `started` claim.
 *
 * @internal
 */
export const ledgerRelease = script(`
if redis.call('HGET', KEYS[1], 's') ~= 'started' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

/**
 * KEYS: run set. ARGV: prefix of record keys. Returns `{m, s, c, r}` per record still stored, in
 * claim order. (Reads record keys named by the set: a single Redis node, not Redis Cluster.)
 *
 * @internal
 */
export const ledgerList = script(`
local out = {}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local v = redis.call('HMGET', ARGV[1] .. key, 'm', 's', 'c', 'r')
  if v[1] then table.insert(out, v) end
end
return out
`)
