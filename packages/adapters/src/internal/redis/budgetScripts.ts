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
local function purge(h, z, now, id)
  local expired = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  local freed, gone = 0, false
  for _, e in ipairs(expired) do
    local held = redis.call('HGET', h, 'h:' .. e)
    if held then
      redis.call('HDEL', h, 'h:' .. e)
      redis.call('HINCRBY', h, 'r', string.format('%d', -tonumber(held)))
      freed = freed + tonumber(held)
      if e == id then gone = true end
    end
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
  return freed, gone
end
`

/**
 * `purge(h, z, now, id)` frees the expired reservations and returns the amount freed and whether
 * `id` was among them. `budget_check(h, z, id, amount, limit, now, accountExpiresAt)` (strings, as
 * the script's arguments): initialises the account, frees expired reservations and returns
 * `status, c, r, e`: status 2 when `id` is held already (a repeated request: not reserved twice), 1
 * when `amount` fits, 0 when it does not; `e` the account's expiry. `budget_take(h, z, id, amount,
 * now, expiresAt, accountExpiresAt, e)` then reserves it. (An account hash always has `c`: a
 * missing `c` is a missing account, read with the other fields in one `HMGET`.)
 * `read_epoch(key, new, init)`: the data-loss epoch (`epoch.ts`), written when
 * missing and `init` is `'1'`; `false` without a key.
 *
 * @internal
 */
export const reserveFunctions = `${purge}
local function budget_check(h, z, id, amountS, limitS, nowS, accountExpiresAtS)
  local amount, limit, now = tonumber(amountS), tonumber(limitS), tonumber(nowS)
  local accountExpiresAt = tonumber(accountExpiresAtS)
  local v = redis.call('HMGET', h, 'c', 'r', 'h:' .. id, 'e')
  local c, r, held, e = tonumber(v[1]), tonumber(v[2]), v[3], tonumber(v[4])
  if not c then
    redis.call('HSET', h, 'c', '0', 'r', '0', 'o', '0', 'e', accountExpiresAtS)
    if accountExpiresAt >= 0 then redis.call('PEXPIRE', h, string.format('%d', math.max(1, accountExpiresAt - now))) end
    c, r, held, e = 0, 0, false, accountExpiresAt
  end
  local freed, gone = purge(h, z, nowS, id)
  r = r - freed
  if held and not gone then return 2, c, r, e end
  if c + r + amount > limit then return 0, c, r, e end
  return 1, c, r, e
end
local function budget_take(h, z, id, amountS, nowS, expiresAtS, accountExpiresAtS, e)
  local now, expiresAt, accountExpiresAt = tonumber(nowS), tonumber(expiresAtS), tonumber(accountExpiresAtS)
  redis.call('HINCRBY', h, 'r', amountS)
  redis.call('HSET', h, 'h:' .. id, amountS)
  redis.call('ZADD', z, expiresAtS, id)
  if e >= 0 and (accountExpiresAt < 0 or accountExpiresAt > e) then
    e = accountExpiresAt
    redis.call('HSET', h, 'e', accountExpiresAtS)
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
end
local function read_epoch(key, new, init)
  if not key then return false end
  local v = redis.call('GET', key)
  if v then return v end
  if init == '1' then
    redis.call('SET', key, new)
    return new
  end
  return false
end
`

/**
 * KEYS: account hash, reservation set, the epoch key (optional). ARGV: id, amount, limit, now,
 * expiresAt, accountExpiresAt (`-1` for never), a new epoch, `1` to write it when missing. Returns
 * `{reserved (1|0), committed, reserved, epoch}` (the epoch `nil` without a key, or missing).
 *
 * @internal
 */
export const reserve = script(`${reserveFunctions}
local h, z = KEYS[1], KEYS[2]
local epoch = read_epoch(KEYS[3], ARGV[7], ARGV[8])
local status, c, r, e = budget_check(h, z, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[6])
if status == 2 then return {1, c, r, epoch} end
if status == 0 then return {0, c, r, epoch} end
budget_take(h, z, ARGV[1], ARGV[2], ARGV[4], ARGV[5], ARGV[6], e)
return {1, c, r + tonumber(ARGV[2]), epoch}
`)

/**
 * `budget_settle(h, z, id, spend, limit, retry)`: commits all of `spend` (also beyond the
 * reservation's amount; 0 releases) of reservation `id`, and adds the part that does not fit under
 * `limit` to `o` too; `retry` `'1'`: a retried commit, which counts nothing when the reservation is
 * gone. Returns `{committed, overspent}`.
 *
 * @internal
 */
export const settleFunction = `
local function budget_settle(h, z, id, spendS, limitS, retry)
  local spend, limit = tonumber(spendS), tonumber(limitS)
  -- (a missing c is a missing account)
  local v = redis.call('HMGET', h, 'c', 'r', 'h:' .. id)
  if not v[1] then return {0, spend} end
  local held = v[3]
  -- A retried commit whose reservation is gone: its first attempt landed.
  if not held and retry == '1' then return {0, 0} end
  -- Room under the limit beside what is committed and reserved (expired reservations not purged
  -- yet still count as reserved: the overspend errs on the safe side).
  local c, r = tonumber(v[1]), tonumber(v[2])
  local room = math.max(0, limit - c - r)
  local over
  if held then
    held = tonumber(held)
    redis.call('HDEL', h, 'h:' .. id)
    redis.call('ZREM', z, id)
    redis.call('HINCRBY', h, 'r', string.format('%d', -held))
    -- Within its reservation a spend always fits; what the provider reported beyond it may not.
    over = math.max(0, spend - held - room)
  else
    -- The reservation expired before its holder settled (its amount may have been reserved again).
    over = math.max(0, spend - room)
  end
  if spend > 0 then redis.call('HINCRBY', h, 'c', string.format('%d', spend)) end
  if over > 0 then redis.call('HINCRBY', h, 'o', string.format('%d', over)) end
  return {spend, over}
end
`

/**
 * KEYS: account hash, reservation set. ARGV: id, spend (all of it is committed), limit,
 * retry (`1`: a retried commit, which counts nothing when the reservation is gone). Returns
 * `{committed, overspent}`. `spend` 0 releases.
 *
 * @internal
 */
export const settle = script(`${settleFunction}
return budget_settle(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
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
