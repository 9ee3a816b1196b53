/**
 * `RateLimitStore` on Redis: one hash per provider key and UTC minute (`r` requests, `t` tokens),
 * expiring two minutes after it was last counted in. `take` is one script (atomic: both limits
 * checked, both counted or neither); `adjust` is sent without waiting for its reply.
 *
 * @internal
 */
import * as RateLimitStore from "@modelgate/core/RateLimitStore"
import type { Client } from "./client.js"
import { bad } from "./client.js"
import { script } from "./script.js"

/**
 * KEYS: the window's hash. ARGV: tokens, requests per minute (`-1`: none), tokens per minute
 * (`-1`: none), expiry ms. Returns 1 when counted, 0 when either limit has no headroom.
 *
 * @internal
 */
export const take = script(`
local r = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
local t = tonumber(redis.call('HGET', KEYS[1], 't') or '0')
local tokens, rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if (rpm >= 0 and r + 1 > rpm) or (tpm >= 0 and t + tokens > tpm) then return 0 end
redis.call('HINCRBY', KEYS[1], 'r', 1)
redis.call('HINCRBY', KEYS[1], 't', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

/**
 * KEYS: the window's hash. ARGV: tokens to add (negative gives back; the count never goes below 0).
 *
 * @internal
 */
export const adjust = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HINCRBY', KEYS[1], 't', ARGV[1]) < 0 then redis.call('HSET', KEYS[1], 't', '0') end
return 1
`)

/** @internal */
export const makeRateLimitStore = (client: Client, prefix: string): RateLimitStore.Service => {
  const keyOf = (key: string, window: number) => `${prefix}ratelimit:{${key}}:${window}`
  return RateLimitStore.RateLimitStore.of({
    take: (r) => {
      const window = Math.floor(r.now / RateLimitStore.windowMillis)
      return client.script(
        "ratelimit",
        "take",
        take,
        [keyOf(r.key, window)],
        [
          String(Math.max(0, Math.ceil(r.tokens))),
          String(r.requestsPerMinute ?? -1),
          String(r.tokensPerMinute ?? -1),
          String(2 * RateLimitStore.windowMillis)
        ],
        (reply): RateLimitStore.Admission | typeof bad =>
          reply === 1
            ? { _tag: "Taken", window }
            : reply === 0
              ? { _tag: "Limited", resetsAt: (window + 1) * RateLimitStore.windowMillis }
              : bad
      )
    },
    adjust: (key, window, tokens) => client.send(adjust, [keyOf(key, window)], [String(Math.trunc(tokens))])
  })
}
