/**
 * Data-loss detection: an epoch key (`{prefix}epoch`) written when the stores first initialise an
 * empty Redis. A client that has seen the epoch and then finds it missing knows Redis came back
 * empty (a restart without persistence, a `FLUSHALL`, a failover to an empty replica): from then on
 * tool-ledger claims fail closed, and the budget store reports what it had seen committed, until an
 * operator acknowledges (which writes a new epoch; every other client adopts it).
 *
 * The epoch is checked on every ledger claim (pipelined with it: the same round trip), read back by
 * every budget reservation's script (the same round trip) and every response-cache read (the same
 * command), and in the background when none of these read it for `intervalMs`.
 *
 * A client that starts against an empty Redis initialises it: an empty restart while no gateway
 * process runs is not detected.
 *
 * @internal
 */
import type { StoreError } from "@modelgate/core/Errors"
import { Effect, Metric, Schedule } from "effect"
import type { Scope } from "effect"
import type { Client } from "./client.js"
import { bad, realClock, storeError } from "./client.js"
import { script } from "./script.js"

/**
 * KEYS: the epoch key. ARGV: a new epoch, `"1"` to write it when the key is missing. Returns the
 * epoch (after writing it), or nil when missing and not written.
 *
 * @internal
 */
export const readEpoch = script(`
local v = redis.call('GET', KEYS[1])
if v then return v end
if ARGV[2] == '1' then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return false
`)

/** Redis data losses detected (tag `store`). @internal */
export const dataLosses = Metric.counter("modelgate.store.data_lost", {
  description: "Times a client found Redis empty (its epoch key missing) after having seen it",
  incremental: true
})

/** The detail of a claim refused after a data loss. @internal */
export const lostDetail = "data lost: Redis came back empty; acknowledge it (Redis acknowledgeDataLoss) to resume"

/** @internal */
export interface Epoch {
  /** One read of the epoch key (initialising it on first use). */
  readonly check: Effect.Effect<void, StoreError>
  /** The epoch key (read by other stores' scripts and commands). */
  readonly key: string
  /** The arguments of a script that reads the epoch: a new epoch, and `"1"` to write it when missing. */
  readonly initArgs: () => readonly [string, string]
  /**
   * The epoch another operation read (`null`: missing, and not written): what `check` does with
   * its reply; the report of a loss detected now, or `undefined` (nothing to report).
   */
  readonly observe: (reply: string | null) => Effect.Effect<void> | undefined
  /** Whether a loss was detected and not yet acknowledged. */
  readonly lost: () => boolean
  /** The operator's acknowledgement: a new epoch; claims resume. */
  readonly acknowledge: Effect.Effect<void, StoreError>
  /** Called once per detected loss (before `lost` turns true for the callers). */
  readonly onLoss: (listener: () => void) => void
}

const noInit = ["", "0"] as const

const newEpoch = () => `${Date.now().toString(36)}.${Math.floor(Math.random() * 2 ** 31).toString(36)}`

/**
 * The epoch of `client`, checked in the background every `intervalMs` (real time) for the scope's
 * lifetime.
 *
 * @internal
 */
export const makeEpoch = (
  client: Client,
  prefix: string,
  intervalMs: number
): Effect.Effect<Epoch, never, Scope.Scope> =>
  Effect.gen(function* () {
    const key = `${prefix}epoch`
    let seen: string | undefined
    let lost = false
    const listeners: Array<() => void> = []
    const detected = Effect.suspend(() => {
      if (lost) return Effect.void
      for (const f of listeners) f()
      lost = true
      return Effect.zipRight(
        Metric.increment(dataLosses),
        Effect.logError("Redis came back empty (epoch key missing): tool-ledger claims fail closed until acknowledged")
      )
    })
    let lastReadAt = 0
    const observe: Epoch["observe"] = (reply) => {
      lastReadAt = Date.now()
      if (reply === null) return seen === undefined ? undefined : lost ? undefined : detected
      if (seen === undefined || reply === seen) {
        seen = reply
        return undefined
      }
      // Another epoch: a loss was acknowledged elsewhere (perhaps one this client did not see).
      const missed = lost ? Effect.void : detected
      return Effect.zipRight(
        missed,
        Effect.sync(() => {
          seen = reply
          lost = false
        })
      )
    }
    // Once an epoch is known, nothing is written: no new epoch to make per operation.
    const initArgs = () => (seen === undefined ? ([newEpoch(), "1"] as const) : noInit)
    const check: Epoch["check"] = Effect.suspend(() =>
      client.script("ledger", "epoch", readEpoch, [key], initArgs(), (reply) =>
        reply === null || typeof reply === "string" ? reply : bad
      )
    ).pipe(Effect.flatMap((reply) => observe(reply) ?? Effect.void))
    const acknowledge: Epoch["acknowledge"] = Effect.suspend(() => {
      const next = newEpoch()
      return client
        .command(
          "ledger",
          "acknowledge",
          (r) => r.set(key, next),
          (reply) => (reply === "OK" ? undefined : bad)
        )
        .pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              seen = next
              lost = false
            })
          )
        )
    })
    // In the background only when no operation read the epoch for `intervalMs`.
    const background = Effect.suspend(() => (Date.now() - lastReadAt < intervalMs ? Effect.void : Effect.ignore(check)))
    yield* Effect.forkScoped(Effect.repeat(background, Schedule.spaced(intervalMs)).pipe(Effect.withClock(realClock)))
    return {
      check,
      key,
      initArgs,
      observe,
      lost: () => lost,
      acknowledge,
      onLoss: (listener) => listeners.push(listener)
    }
  })

/**
 * `effect` pipelined with an epoch check (one round trip); fails closed after an unacknowledged
 * loss. A failed check leaves the verdict to `effect` (Redis down fails it too) and to the last
 * check that answered.
 *
 * @internal
 */
export const guarded = <A>(epoch: Epoch, operation: string, effect: Effect.Effect<A, StoreError>) =>
  Effect.flatMap(Effect.zip(Effect.either(epoch.check), effect, { concurrent: true }), ([, a]) =>
    epoch.lost() ? Effect.fail(storeError("ledger", operation, lostDetail)) : Effect.succeed(a)
  )

/**
 * `f()` after the report of what `epoch` made of `reply` (the epoch another operation read): the
 * spend a loss reports is what was seen before this reply.
 *
 * @internal
 */
export const afterObserving = <A>(epoch: Epoch | undefined, reply: string | null, f: () => A): Effect.Effect<A> => {
  const report = epoch?.observe(reply)
  return report === undefined ? Effect.succeed(f()) : Effect.zipRight(report, Effect.sync(f))
}
