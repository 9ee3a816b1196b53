/**
 * The persistence seam of `Health`'s circuit breakers: the state of every breaker that is open or
 * half-open, by route (target ref). A closed breaker has no entry, so a healthy route costs the
 * store nothing but a read. The memory store serves one process; a shared store (Redis) lets every
 * gateway process see the same breakers.
 *
 * Details
 *
 * - `modify` is compare-and-set shaped: the breaker's transitions are pure functions of the stored
 *   state, so a shared store applies them with one round trip (a Lua script, or `WATCH`/`MULTI`
 *   with retry). An attempt does at most one `get` and one `modify` to take its slot, and one of
 *   each to report its result.
 * - Every operation fails with `StoreError` (`store: "breaker"`) when the store cannot answer, and
 *   must bound its own wait (a network store times out its round trip). What `Health` does with
 *   it: admission fails closed, bookkeeping after a provider answered logs and goes on (see the
 *   `Health` module).
 *
 * @since 0.2.0
 */
import { Context, Effect, Layer } from "effect"
import type { StoreError } from "./Errors.js"
import type { BreakerState } from "./internal/breakerState.js"
import * as FastPath from "./internal/fastPath.js"

export { BreakerState } from "./internal/breakerState.js"

/**
 * The operations of a breaker store.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  /** The state of `route`; `undefined` for a closed breaker. */
  readonly get: (route: string) => Effect.Effect<BreakerState | undefined, StoreError>
  /**
   * Atomically replaces the state of `route` with the second element of `f(current)` (`undefined`
   * removes it) and returns the first. `f` is pure and may run more than once: a shared store
   * implements this as compare-and-set with retry.
   */
  readonly modify: <A>(
    route: string,
    f: (current: BreakerState | undefined) => readonly [A, BreakerState | undefined]
  ) => Effect.Effect<A, StoreError>
}

/**
 * @since 0.2.0
 * @category Context
 */
export class BreakerStore extends Context.Tag("@modelgate/core/BreakerStore")<BreakerStore, Service>() {}

/**
 * An in-memory breaker store. Holds only open and half-open breakers; never fails.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => {
  const states = new Map<string, BreakerState>()
  // Read at once by `Health` on its hot path (`internal/fastPath`): a closed breaker runs no Effect.
  const store = BreakerStore.of({
    get: (route) => Effect.sync(() => states.get(route)),
    modify: (route, f) =>
      Effect.sync(() => {
        const [a, next] = f(states.get(route))
        if (next === undefined) states.delete(route)
        else states.set(route, next)
        return a
      })
  })
  return FastPath.attach(store, { _tag: "BreakerStore", ready: () => true, get: (route) => states.get(route) })
})

/**
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<BreakerStore> = Layer.effect(BreakerStore, makeMemory)
