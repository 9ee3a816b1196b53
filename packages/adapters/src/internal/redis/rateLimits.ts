/**
 * `RateLimitStore` on Redis: one hash per provider key and UTC minute (`r` requests, `t` tokens),
 * expiring two minutes after it was last counted in. `take` is one script (atomic: both limits
 * checked, both counted or neither); `adjust` is sent without waiting for its reply.
 *
 * A `take` never waits past the caller's `deadline`: when the deadline comes before the command
 * timeout, the take is marked in the window's hash (`c:<id>`), and a take the deadline cut (or
 * that failed or was interrupted) is given back (`untake`, sent after it on the same connection:
 * it finds the mark only if the take counted), so an answer that arrives after the caller left
 * counts nothing.
 *
 * @internal
 */
import * as RateLimitStore from "@modelgate/core/RateLimitStore"
import { Effect, Exit } from "effect"
import type { Client } from "./client.js"
import { bad } from "./client.js"
import { script } from "./script.js"

/**
 * KEYS: the window's hash. ARGV: tokens, requests per minute (`-1`: none), tokens per minute
 * (`-1`: none), expiry ms, the take's id (`""`: not marked). Returns 1 when counted, 0 when either
 * limit has no headroom.
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
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'c:' .. ARGV[5], ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

/**
 * KEYS: the window's hash. ARGV: the id of a marked take. Gives back its request and tokens if it
 * counted (never below 0). Returns 1 when given back.
 *
 * @internal
 */
export const untake = script(`
local field = 'c:' .. ARGV[1]
local tokens = redis.call('HGET', KEYS[1], field)
if not tokens then return 0 end
redis.call('HDEL', KEYS[1], field)
if redis.call('HINCRBY', KEYS[1], 'r', -1) < 0 then redis.call('HSET', KEYS[1], 'r', '0') end
if redis.call('HINCRBY', KEYS[1], 't', -tonumber(tokens)) < 0 then redis.call('HSET', KEYS[1], 't', '0') end
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
  // Makes take ids unique across processes sharing the store.
  const instance = Math.floor(Math.random() * 2 ** 31).toString(36)
  let seq = 0
  return RateLimitStore.RateLimitStore.of({
    take: (r) => {
      const window = Math.floor(r.now / RateLimitStore.windowMillis)
      const keys = [keyOf(r.key, window)]
      const left = r.deadline === undefined ? undefined : r.deadline - r.now
      // Marked only when the deadline may cut the wait (it comes before the command timeout).
      const id = left !== undefined && left < client.commandTimeoutMs ? `${instance}.${(++seq).toString(36)}` : ""
      const taken = client.script(
        "ratelimit",
        "take",
        take,
        keys,
        [
          String(Math.max(0, Math.ceil(r.tokens))),
          String(r.requestsPerMinute ?? -1),
          String(r.tokensPerMinute ?? -1),
          String(2 * RateLimitStore.windowMillis),
          id
        ],
        (reply): RateLimitStore.Admission | typeof bad =>
          reply === 1
            ? { _tag: "Taken", window }
            : reply === 0
              ? { _tag: "Limited", resetsAt: (window + 1) * RateLimitStore.windowMillis }
              : bad,
        left
      )
      if (id === "") return taken
      // Cut, lost or interrupted: whatever it counted is given back once it lands.
      return Effect.onExit(taken, (exit) =>
        Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => client.send(untake, keys, [id]))
      )
    },
    adjust: (key, window, tokens) => client.send(adjust, [keyOf(key, window)], [String(Math.trunc(tokens))])
  })
}
