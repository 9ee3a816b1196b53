/**
 * Single flight: concurrent calls with one key in one process wait for the first instead of each
 * calling the provider. The leader runs; followers wait (each bounded by its own deadline) until
 * the leader is done, then read the cache again: a stored answer is theirs, and when the leader's
 * answer was not stored (a failure, a degraded answer) each follower calls on its own.
 *
 * The map of flights lives in the instance (one per `ResponseCache`), never in module state.
 *
 * @internal
 */
import { Deferred, Effect, FiberId, Option } from "effect"
import { bounded } from "../deadline.js"

/** What a call got from the flight: `lead` (it runs), `followed` (the leader finished), `timedOut`. */
export type Turn = "lead" | "followed" | "timedOut"

export interface SingleFlight {
  /**
   * Runs `run` with `"lead"` when no call with `key` is in flight (and holds the flight until it
   * ends, whatever its exit); otherwise waits for that call until the epoch-ms `until` and runs
   * `run` with `"followed"` or `"timedOut"`.
   */
  readonly run: <A, E, R>(
    key: string,
    until: number,
    run: (turn: Turn) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /** Calls in flight now (tests). */
  readonly size: () => number
}

export const makeSingleFlight = (): SingleFlight => {
  const flights = new Map<string, Deferred.Deferred<void>>()
  return {
    size: () => flights.size,
    run: (key, until, run) =>
      Effect.suspend(() => {
        const current = flights.get(key)
        if (current !== undefined) {
          return Effect.flatMap(bounded(Deferred.await(current), until), (done) =>
            run(Option.isSome(done) ? "followed" : "timedOut")
          )
        }
        const mine = Deferred.unsafeMake<void>(FiberId.none)
        flights.set(key, mine)
        return Effect.ensuring(
          run("lead"),
          Effect.suspend(() => {
            if (flights.get(key) === mine) flights.delete(key)
            return Deferred.succeed(mine, undefined)
          })
        )
      })
  }
}
