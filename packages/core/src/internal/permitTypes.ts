/**
 * The data types of module `PermitStore` (re-exported there), and the permit that holds nothing
 * (`Concurrency`'s for an uncapped target): below both `PermitStore` and the
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
 * The permit of an uncapped target (and of `Concurrency.layerOff`): holds nothing, releases
 * nothing. Shared by every call.
 */
export const noopPermit: Permit = { release: () => {} }

/**
 * Which limit kept a key (and sub-key) from a permit: the sub-key's own cap (`workflow_max`), the
 * key's maximum (`tenant_max`), the key's permits kept for its other sub-keys
 * (`workflow_reservations`), or the shared part of the pool (`shared_pool`).
 *
 * @since 0.3.0
 * @category Models
 */
export type PermitLimit = "workflow_max" | "tenant_max" | "workflow_reservations" | "shared_pool"

/**
 * A sub-key's share of each key's permits (a workflow's share of its tenant's): it holds at most
 * `max` of the key's permits, and `reserved` of them are kept for it (the key's other sub-keys can
 * take at most `maxOf(key)` minus the reservations of the others).
 *
 * @since 0.3.0
 * @category Models
 */
export interface Share {
  readonly max: number
  readonly reserved: number
}

/**
 * The limits of one pool. `reservedOf`, `maxOf` and `shareOf` are pure functions of their key.
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
  /**
   * The declared share of a sub-key (a workflow) in every key; `undefined`: none (no cap, nothing
   * reserved). Absent: the pool has no sub-keys.
   *
   * @since 0.3.0
   */
  readonly shareOf?: ((sub: string) => Share | undefined) | undefined
  /**
   * The sum of every declared share's `reserved` (at most each key's `maxOf`, checked by the
   * caller). Default 0.
   *
   * @since 0.3.0
   */
  readonly sharesReserved?: number | undefined
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
   * A permit of `key` (for its sub-key `sub`, when given): at once when one is free, else FIFO
   * among this process's waiters of `key` and `sub` until the epoch-ms instant `until`
   * (`Infinity`: no bound); `undefined` when none came before, after calling `onRefused` with the
   * limit the last try hit. Interrupting the wait leaves nothing behind.
   */
  readonly acquire: (
    key: string,
    until: number,
    sub?: string | undefined,
    onRefused?: ((limit: PermitLimit) => void) | undefined
  ) => Effect.Effect<Permit | undefined, StoreError>
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
