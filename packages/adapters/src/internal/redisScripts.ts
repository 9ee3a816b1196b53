/**
 * The Lua scripts of the Redis stores: each store operation is one script, run atomically by Redis
 * in one round trip (`EVALSHA`, falling back to `EVAL` once when the server does not know it yet).
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
 * Budget account layout: hash `KEYS[1]` with `c` (committed), `r` (reserved), `o` (overspent),
 * `e` (account expiry, epoch ms of the caller's clock, `-1` for never) and one `h:<id>` field per
 * live reservation (its amount); sorted set `KEYS[2]` of reservation ids scored by their expiry.
 * Both keys expire (relative to the caller's `now`) once the account's window is over and no
 * reservation can still be live.
 */
const purge = `
local function purge(h, z, now)
  local expired = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, id in ipairs(expired) do
    local held = redis.call('HGET', h, 'h:' .. id)
    if held then
      redis.call('HDEL', h, 'h:' .. id)
      redis.call('HINCRBY', h, 'r', string.format('%d', -tonumber(held)))
    end
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
end
`

/**
 * KEYS: account hash, reservation set. ARGV: id, amount, limit, now, expiresAt, accountExpiresAt
 * (`-1` for never). Returns `{reserved (1|0), committed, reserved}`.
 *
 * @internal
 */
export const reserve = script(`${purge}
local h, z = KEYS[1], KEYS[2]
local id = ARGV[1]
local amount, limit, now = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local expiresAt, accountExpiresAt = tonumber(ARGV[5]), tonumber(ARGV[6])
if redis.call('EXISTS', h) == 0 then
  redis.call('HSET', h, 'c', '0', 'r', '0', 'o', '0', 'e', ARGV[6])
  if accountExpiresAt >= 0 then redis.call('PEXPIRE', h, string.format('%d', math.max(1, accountExpiresAt - now))) end
end
purge(h, z, ARGV[4])
local c = tonumber(redis.call('HGET', h, 'c'))
local r = tonumber(redis.call('HGET', h, 'r'))
-- A reservation id already held (a repeated request) is not reserved twice.
if redis.call('HEXISTS', h, 'h:' .. id) == 1 then return {1, c, r} end
if c + r + amount > limit then return {0, c, r} end
r = r + amount
redis.call('HINCRBY', h, 'r', ARGV[2])
redis.call('HSET', h, 'h:' .. id, ARGV[2])
redis.call('ZADD', z, ARGV[5], id)
local e = tonumber(redis.call('HGET', h, 'e'))
if e >= 0 and (accountExpiresAt < 0 or accountExpiresAt > e) then
  e = accountExpiresAt
  redis.call('HSET', h, 'e', ARGV[6])
end
if e < 0 then
  redis.call('PERSIST', h)
  redis.call('PERSIST', z)
else
  -- The keys live until the account's window is over and every live reservation has expired.
  local ttl = math.max(1, math.max(e, expiresAt) - now)
  local current = redis.call('PTTL', h)
  if current >= 0 and ttl > current then redis.call('PEXPIRE', h, string.format('%d', ttl)) else ttl = math.max(ttl, current) end
  redis.call('PEXPIRE', z, string.format('%d', ttl))
end
return {1, c, r}
`)

/**
 * KEYS: account hash, reservation set. ARGV: id, spend (already capped by the amount), limit,
 * retry (`1`: a retried commit, which counts nothing when the reservation is gone). Returns
 * `{committed, overspent}`. `spend` 0 releases.
 *
 * @internal
 */
export const settle = script(`
local h, z = KEYS[1], KEYS[2]
local id = ARGV[1]
local spend, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('EXISTS', h) == 0 then return {0, spend} end
local held = redis.call('HGET', h, 'h:' .. id)
if held then
  held = tonumber(held)
  redis.call('HDEL', h, 'h:' .. id)
  redis.call('ZREM', z, id)
  redis.call('HINCRBY', h, 'r', string.format('%d', -held))
  local committed = math.min(spend, held)
  if committed > 0 then redis.call('HINCRBY', h, 'c', string.format('%d', committed)) end
  return {committed, 0}
end
-- A retried commit whose reservation is gone: its first attempt landed.
if ARGV[4] == '1' then return {0, 0} end
-- The reservation expired before its holder settled: count what still fits the limit, keep the
-- rest apart (expired reservations not purged yet still count as reserved: the safe side).
local c = tonumber(redis.call('HGET', h, 'c'))
local r = tonumber(redis.call('HGET', h, 'r'))
local committed = math.min(spend, math.max(0, limit - c - r))
if committed > 0 then redis.call('HINCRBY', h, 'c', string.format('%d', committed)) end
if spend - committed > 0 then redis.call('HINCRBY', h, 'o', string.format('%d', spend - committed)) end
return {committed, spend - committed}
`)

/**
 * KEYS: account hash, reservation set. ARGV: now. Returns `{committed, reserved, overspent}`.
 *
 * @internal
 */
export const balance = script(`${purge}
local h, z = KEYS[1], KEYS[2]
if redis.call('EXISTS', h) == 0 then return {0, 0, 0} end
purge(h, z, ARGV[1])
local v = redis.call('HMGET', h, 'c', 'r', 'o')
return {tonumber(v[1]), tonumber(v[2]), tonumber(v[3])}
`)

/**
 * Compare-and-set of a breaker's stored value. KEYS: breaker key, set of routes with a state,
 * change sequence. ARGV: expected value (`''` for none), new value (`''` removes), channel, route.
 * Returns the change's sequence number when set (and publishes `<seq>\n<route>\n<value>` on the
 * channel), 0 when the value changed meanwhile.
 *
 * @internal
 */
export const breakerCas = script(`
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[4])
else
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('SADD', KEYS[2], ARGV[4])
end
local seq = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[3], seq .. '\\n' .. ARGV[4] .. '\\n' .. ARGV[2])
return seq
`)

/**
 * Every breaker with a state, at one instant. KEYS: set of routes, change sequence. ARGV: prefix
 * of breaker keys. Returns `{seq, route, value, route, value, …}`.
 *
 * @internal
 */
export const breakerAll = script(`
local out = { tonumber(redis.call('GET', KEYS[2]) or '0') }
for _, route in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('GET', ARGV[1] .. route)
  if v then
    table.insert(out, route)
    table.insert(out, v)
  end
end
return out
`)

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
