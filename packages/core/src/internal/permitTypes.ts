/**
 * The data types of module `PermitStore` (re-exported there): below both `PermitStore` and the
 * private fast path (`internal/fastPath`) that the memory pools attach, so neither imports the
 * other back.
 */
import type { Effect } from "effect"
import type { StoreError } from "../Errors.js"

/**
 * A held permit. `release` is synchronous and idempotent: the first call gives the permit back (to
 * the next waiter, if any), later calls do nothing.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Permit {
  readonly release: () => void
}

/**
 * The limits of one pool. `reservedOf` and `maxOf` are pure functions of the key.
 *
 * @since 0.2.0
 * @category Models
 */
export interface PoolOptions {
  /** The pool's name in the store: `tenants`, or `target:<ref>` for a capped target. */
  readonly name: string
  /** Permits that any key may use (after the reserved shares). */
  readonly shared: number
  /** Permits only `key` may use. */
  readonly reservedOf: (key: string) => number
  /** Most permits `key` holds at once. */
  readonly maxOf: (key: string) => number
}

/**
 * Permits in use and waiters of one pool. A shared pool counts every process's holders and this
 * process's waiters.
 *
 * @since 0.2.0
 * @category Models
 */
export interface PoolSnapshot {
  readonly inUse: number
  readonly sharedInUse: number
  readonly waiting: number
  /** Keys with state (holding or waiting). Idle keys have none. */
  readonly keys: number
  readonly byKey: ReadonlyMap<string, { readonly held: number; readonly waiting: number }>
}

/**
 * One pool of permits.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Pool {
  /**
   * A permit of `key`: at once when one is free, else FIFO among this process's waiters of `key`
   * until the epoch-ms instant `until` (`Infinity`: no bound); `undefined` when none came before.
   * Interrupting the wait leaves nothing behind.
   */
  readonly acquire: (key: string, until: number) => Effect.Effect<Permit | undefined, StoreError>
  /**
   * Permits of `key` this process holds now (synchronous, no I/O): a capped target's concurrency
   * headroom in scored routing. A pool without it reports no headroom.
   *
   * @since 0.2.0
   */
  readonly heldHere?: ((key: string) => number) | undefined
  readonly snapshot: Effect.Effect<PoolSnapshot>
}

/**
 * A permit store: makes the pools `Concurrency` needs (called once per pool, when `Concurrency` is
 * built).
 *
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  readonly pool: (options: PoolOptions) => Pool
}
