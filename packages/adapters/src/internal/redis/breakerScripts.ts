/**
 * The Lua scripts of the Redis `BreakerStore`: compare-and-set with publication, and the load of every breaker.
 *
 * @internal
 */
import { script } from "./script.js"

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
