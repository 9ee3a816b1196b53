/**
 * The Lua scripts of the Redis `BudgetStore` (see `script.ts` for how numbers are written).
 *
 * @internal
 */
import { script } from "./script.js"

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
