/**
 * The Lua scripts of the Redis permit pools. One pool is three keys: hash `KEYS[1]` with `k:<key>`
 * (permits `key` holds) and `s` (shared permits in use); sorted set `KEYS[2]` of leases scored by
 * their end (ms of the server's clock, `TIME`, so processes with skewed clocks agree); hash
 * `KEYS[3]` of lease → `<reserved of its key>\n<key>`, or, in a pool with workflow shares,
 * `<reserved of its key> <reserved of its sub-key, -1 without a share> <sub-key>\n<key>` (the pool
 * hash then also has `o:<key>`, the key's permits held beyond their sub-key's reservation, and
 * `q:<key>\n<sub-key>`, the permits of a sub-key with a share). Every script first frees the leases that
 * ended (their holders crashed or lost their release). A release, and an ask that freed ended
 * leases, publishes on the pool's channel while a waiter is counted (`w`), so that waiters in every
 * process wake up.
 *
 * @internal
 */
import { script } from "./script.js"

/**
 * `now_ms()`, `free(h, info, lease)` and `purge(h, z, info, now)` of every permit script, and
 * `purge_waking(h, z, info, now, channel)`: `purge`, then a wake-up on `channel` when it freed
 * permits and the pool has waiters.
 *
 * @internal
 */
export const common = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function free(h, info, lease)
  local v = redis.call('HGET', info, lease)
  if not v then return false end
  redis.call('HDEL', info, lease)
  local nl = string.find(v, '\\n', 1, true)
  local head = string.sub(v, 1, nl - 1)
  local key = string.sub(v, nl + 1)
  local r, subReserved, sub = string.match(head, '^(%d+) (%-?%d+) (.*)$')
  local reserved = tonumber(r or head)
  local held = redis.call('HINCRBY', h, 'k:' .. key, -1)
  if held + 1 > reserved then redis.call('HINCRBY', h, 's', -1) end
  if held <= 0 then redis.call('HDEL', h, 'k:' .. key) end
  if r then
    local over = true
    subReserved = tonumber(subReserved)
    if subReserved >= 0 then
      local q = 'q:' .. key .. '\\n' .. sub
      local n = redis.call('HINCRBY', h, q, -1)
      if n <= 0 then redis.call('HDEL', h, q) end
      over = n + 1 > subReserved
    end
    if over and redis.call('HINCRBY', h, 'o:' .. key, -1) <= 0 then redis.call('HDEL', h, 'o:' .. key) end
  end
  return true
end
local function purge(h, z, info, now)
  local ended = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, lease in ipairs(ended) do free(h, info, lease) end
  if #ended > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
  return #ended
end
local function purge_waking(h, z, info, now, channel)
  if purge(h, z, info, now) > 0 and tonumber(redis.call('HGET', h, 'w') or '0') > 0 then
    redis.call('PUBLISH', channel, '')
  end
end
`

/**
 * KEYS: pool hash, lease set, lease hash. ARGV: key, lease id, lease ms, reserved, max, shared,
 * channel; in a pool with workflow shares also: sub-key, its max (-1: no cap), its reserved (-1: no
 * share), the sum of the shares' reservations. Returns 1 when the permit was taken (leased), else
 * the limit that kept `key` from one: 0 the shared part, -1 the sub-key's cap, -2 the key's max, -3
 * the key's permits kept for its other sub-keys (the order of the memory pool's checks).
 *
 * @internal
 */
export const acquire = script(`${common}
local h, z, info = KEYS[1], KEYS[2], KEYS[3]
local key, lease = ARGV[1], ARGV[2]
local leaseMs, reserved, max, shared = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms()
purge_waking(h, z, info, now, ARGV[7])
if redis.call('HEXISTS', info, lease) == 1 then return 1 end
local sub, subMax, subReserved, kept = ARGV[8], tonumber(ARGV[9] or '-1'), tonumber(ARGV[10] or '-1'), tonumber(ARGV[11] or '0')
local q = sub and ('q:' .. key .. '\\n' .. sub)
local subHeld = 0
if sub and subReserved >= 0 then subHeld = tonumber(redis.call('HGET', h, q) or '0') end
if subMax >= 0 and subHeld >= subMax then return -1 end
local held = tonumber(redis.call('HGET', h, 'k:' .. key) or '0')
if held >= max then return -2 end
local within = subReserved >= 0 and subHeld < subReserved
if sub and kept > 0 and not within and tonumber(redis.call('HGET', h, 'o:' .. key) or '0') >= max - kept then
  return -3
end
if held >= reserved then
  local s = tonumber(redis.call('HGET', h, 's') or '0')
  if s >= shared then return 0 end
  redis.call('HINCRBY', h, 's', 1)
end
redis.call('HINCRBY', h, 'k:' .. key, 1)
redis.call('ZADD', z, string.format('%d', now + leaseMs), lease)
if sub then
  if subReserved >= 0 then redis.call('HINCRBY', h, q, 1) end
  if not within then redis.call('HINCRBY', h, 'o:' .. key, 1) end
  redis.call('HSET', info, lease, ARGV[4] .. ' ' .. ARGV[10] .. ' ' .. sub .. '\\n' .. key)
else
  redis.call('HSET', info, lease, ARGV[4] .. '\\n' .. key)
end
return 1
`)

/**
 * KEYS: pool hash, lease set, lease hash. ARGV: lease id, channel. Gives the permit back (an
 * unknown or ended lease is ignored) and publishes on the channel.
 *
 * @internal
 */
export const release = script(`${common}
local h, z, info = KEYS[1], KEYS[2], KEYS[3]
local freed = free(h, info, ARGV[1])
redis.call('ZREM', z, ARGV[1])
if freed and tonumber(redis.call('HGET', h, 'w') or '0') > 0 then redis.call('PUBLISH', ARGV[2], '') end
return freed and 1 or 0
`)

/**
 * KEYS: pool hash, lease set, lease hash. ARGV: `1` (a waiter starts waiting) or `-1` (it stopped).
 * Counts the waiting heads of every process in field `w`: releases publish only while it is above 0
 * (a count left behind by a crashed process only costs messages).
 *
 * @internal
 */
export const waiting = script(`
if redis.call('HINCRBY', KEYS[1], 'w', ARGV[1]) < 0 then redis.call('HSET', KEYS[1], 'w', '0') end
return 1
`)

/**
 * KEYS: pool hash, lease set, lease hash. Frees ended leases, then returns the pool hash as a flat
 * field/value list.
 *
 * @internal
 */
export const snapshot = script(`${common}
local h, z, info = KEYS[1], KEYS[2], KEYS[3]
purge(h, z, info, now_ms())
return redis.call('HGETALL', h)
`)
