/**
 * Concurrency permits per tenant, and optional caps per target.
 *
 * Details
 *
 * - `permits` is the process's capacity (calls in flight at once). Each declared tenant may have
 *   `reserved` permits carved out of it that no other tenant can take; what is left is the shared
 *   pool. A tenant uses its reserved permits first, then the shared pool, up to its `max`.
 *   Saturating one tenant therefore never blocks another tenant's reserved capacity.
 * - Waiting is FIFO: per tenant strictly, and across tenants for the shared pool (the longest
 *   waiter that may use a freed shared permit gets it). The engine bounds every wait by the call's
 *   deadline; an interrupted wait leaves nothing behind.
 * - Memory is bounded by the tenants that hold or wait for a permit: an idle tenant has no state.
 * - Undeclared tenants (the policy chosen here) have no reserved permits and use the shared pool
 *   up to `undeclaredMax` (default: the whole pool). With no shared pool they wait until their
 *   deadline; to reject unknown tenants outright, declare tenants in `Budgets` (its default
 *   rejects them before a permit is asked for).
 * - `targets` caps in-flight attempts per target ref, to protect a provider (a self-hosted model).
 *
 * @since 0.1.0
 */
import { Config, Context, type Duration, Effect, Layer, Option, Schema } from "effect"
import type { ConfigError, Scope } from "effect"
import { ConfigProblem, GatewayConfigError } from "./Errors.js"
import { Permits } from "./internal/permits.js"
import { TenantId } from "./ModelCommand.js"
import type { TargetRef } from "./ModelTarget.js"

/**
 * Permits in use and waiters, for monitoring and tests.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Snapshot {
  readonly inUse: number
  readonly sharedInUse: number
  readonly waiting: number
  /** Tenants with state (holding or waiting for a permit); idle tenants have none. */
  readonly tenants: number
  readonly byTenant: ReadonlyMap<string, { readonly held: number; readonly waiting: number }>
  /** Per capped target: attempts in flight and waiting. */
  readonly targets: ReadonlyMap<string, { readonly inUse: number; readonly waiting: number }>
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /**
   * Waits (FIFO) for a permit of `tenant`; released when the scope closes. Interruptible while
   * waiting (the caller bounds the wait with its deadline). `capability` (the workflow name) is
   * informational for now.
   */
  readonly acquire: (tenant: TenantId, capability: string) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Waits at most `maxWait` for a permit of `target` (always `true` for an uncapped target);
   * `false` when none came in time. Released when the scope closes.
   */
  readonly acquireTarget: (
    target: TargetRef,
    maxWait: Duration.DurationInput
  ) => Effect.Effect<boolean, never, Scope.Scope>
  /** Whether `target` has a concurrency cap (uncapped targets need no permit: the hot path skips it). */
  readonly isCapped: (target: TargetRef) => boolean
  readonly snapshot: Effect.Effect<Snapshot>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Concurrency extends Context.Tag("@modelgate/core/Concurrency")<Concurrency, Service>() {}

/**
 * Runs `self` holding a permit of `tenant`.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withPermit =
  (tenant: TenantId, capability: string) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Concurrency> =>
    Effect.flatMap(Concurrency, (c) => Effect.scoped(Effect.zipRight(c.acquire(tenant, capability), self)))

const emptySnapshot: Snapshot = {
  inUse: 0,
  sharedInUse: 0,
  waiting: 0,
  tenants: 0,
  byTenant: new Map(),
  targets: new Map()
}

/**
 * No limit.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerUnbounded: Layer.Layer<Concurrency> = Layer.succeed(
  Concurrency,
  Concurrency.of({
    acquire: () => Effect.void,
    acquireTarget: () => Effect.succeed(true),
    isCapped: () => false,
    snapshot: Effect.succeed(emptySnapshot)
  })
)

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category Models
 */
export const TenantPermits = Schema.Struct({
  /** Permits only this tenant may use, taken out of `permits`. Default 0. */
  reserved: Schema.optional(Schema.Number),
  /** Most permits this tenant holds at once. Default: reserved + the shared pool. */
  max: Schema.optional(Schema.Number)
})
/** @since 0.1.0 */
export type TenantPermits = typeof TenantPermits.Type

/**
 * Concurrency configuration (decodable from JSON).
 *
 * @since 0.1.0
 * @category Models
 */
export const ConcurrencyConfig = Schema.Struct({
  /** Total permits: calls in flight at once in this process. */
  permits: Schema.Number,
  tenants: Schema.optional(Schema.Record({ key: Schema.String, value: TenantPermits })),
  /** Most permits an undeclared tenant holds at once. Default: the whole shared pool. */
  undeclaredMax: Schema.optional(Schema.Number),
  /** In-flight attempts per target ref. */
  targets: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Number }))
})

/**
 * @since 0.1.0
 * @category Models
 */
export type Options = typeof ConcurrencyConfig.Type

const isTenantId = Schema.is(TenantId)
const isCount = (n: number, min: number) => Number.isInteger(n) && n >= min

/**
 * Every problem of a concurrency configuration (empty when valid): counts that are not integers
 * or not positive, a reserved total above `permits`, a `max` below its tenant's `reserved` or
 * above what the tenant can ever reach, malformed tenant ids.
 *
 * @since 0.1.0
 * @category Validation
 */
export const validate = (options: Options): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const add = (path: string, reason: string, detail: string) =>
    problems.push(new ConfigProblem({ path, reason, detail }))
  const count = (path: string, n: number, min: number) => {
    if (isCount(n, min)) return true
    const reason = !Number.isInteger(n) ? "NOT_AN_INTEGER" : min === 0 ? "NEGATIVE_LIMIT" : "NON_POSITIVE_LIMIT"
    add(path, reason, `must be an integer ≥ ${min}, got ${n}`)
    return false
  }
  count("concurrency.permits", options.permits, 1)
  const tenants = Object.entries(options.tenants ?? {})
  let reservedTotal = 0
  for (const [, t] of tenants) {
    if (t.reserved !== undefined && isCount(t.reserved, 0)) reservedTotal += t.reserved
  }
  const shared = Math.max(0, options.permits - reservedTotal)
  for (const [tenant, t] of tenants) {
    const path = `concurrency.tenants.${tenant}`
    if (!isTenantId(tenant)) add(path, "INVALID_TENANT", "not a valid tenant id")
    const reserved = t.reserved ?? 0
    count(`${path}.reserved`, reserved, 0)
    if (t.max !== undefined && count(`${path}.max`, t.max, 1)) {
      if (isCount(reserved, 0) && t.max < reserved) {
        add(`${path}.max`, "MAX_BELOW_RESERVED", `max ${t.max} is below reserved ${reserved}`)
      } else if (isCount(reserved, 0) && t.max > reserved + shared) {
        add(`${path}.max`, "MAX_ABOVE_CAPACITY", `max ${t.max} exceeds reserved ${reserved} + shared pool ${shared}`)
      }
    }
  }
  if (Number.isFinite(options.permits) && reservedTotal > options.permits) {
    add(
      "concurrency.tenants",
      "RESERVED_ABOVE_POOL",
      `reserved permits total ${reservedTotal}, above permits ${options.permits}`
    )
  }
  if (options.undeclaredMax !== undefined) {
    if (count("concurrency.undeclaredMax", options.undeclaredMax, 1) && options.undeclaredMax > shared) {
      add(
        "concurrency.undeclaredMax",
        "MAX_ABOVE_CAPACITY",
        `${options.undeclaredMax} exceeds the shared pool ${shared}`
      )
    }
  }
  for (const [ref, cap] of Object.entries(options.targets ?? {})) {
    count(`concurrency.targets.${ref}`, cap, 1)
  }
  return problems
}

// ---------------------------------------------------------------------------------------------
// In-memory implementation
// ---------------------------------------------------------------------------------------------

/** Takes a permit for the rest of the scope; `wait` does the (interruptible) waiting. */
const hold = (permits: Permits, key: string, wait: (take: Effect.Effect<void>) => Effect.Effect<boolean>) =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.suspend(() => (permits.tryAcquire(key) ? Effect.succeed(true) : restore(wait(permits.acquire(key))))),
      (got) =>
        got
          ? Effect.as(
              Effect.addFinalizer(() => Effect.sync(() => permits.release(key))),
              true
            )
          : Effect.succeed(false)
    )
  )

/**
 * In-memory permits. Fails with one `GatewayConfigError` listing every problem of `options`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Service, GatewayConfigError> =>
  Effect.suspend(() => {
    const problems = validate(options)
    if (problems.length > 0) return Effect.fail(new GatewayConfigError({ problems }))
    const declared = new Map(Object.entries(options.tenants ?? {}))
    let reservedTotal = 0
    for (const t of declared.values()) reservedTotal += t.reserved ?? 0
    const shared = options.permits - reservedTotal
    const tenants = new Permits({
      shared,
      reservedOf: (key) => declared.get(key)?.reserved ?? 0,
      maxOf: (key) => {
        const t = declared.get(key)
        return t === undefined ? (options.undeclaredMax ?? shared) : (t.max ?? (t.reserved ?? 0) + shared)
      }
    })
    const targets = new Map<string, Permits>()
    for (const [ref, cap] of Object.entries(options.targets ?? {})) {
      targets.set(ref, new Permits({ shared: cap, reservedOf: () => 0, maxOf: () => cap }))
    }
    const service = Concurrency.of({
      acquire: (tenant) => Effect.asVoid(hold(tenants, tenant, (take) => Effect.as(take, true))),
      acquireTarget: (target, maxWait) => {
        const permits = targets.get(target)
        if (permits === undefined) return Effect.succeed(true)
        return hold(permits, target, (take) => Effect.map(Effect.timeoutOption(take, maxWait), Option.isSome))
      },
      isCapped: (target) => targets.has(target),
      snapshot: Effect.sync(() => {
        const t = tenants.snapshot()
        const byTarget = new Map<string, { inUse: number; waiting: number }>()
        for (const [ref, p] of targets) {
          const s = p.snapshot()
          byTarget.set(ref, { inUse: s.inUse, waiting: s.waiting })
        }
        return {
          inUse: t.inUse,
          sharedInUse: t.sharedInUse,
          waiting: t.waiting,
          tenants: t.keys,
          byTenant: t.byKey,
          targets: byTarget
        }
      })
    })
    return Effect.succeed(service)
  })

/**
 * In-memory permits as a Layer.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory = (options: Options): Layer.Layer<Concurrency, GatewayConfigError> =>
  Layer.effect(Concurrency, make(options))

/**
 * In-memory permits with options read from `Config` (each field may be a `Config`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<Concurrency, GatewayConfigError | ConfigError.ConfigError> =>
  Layer.effect(Concurrency, Effect.flatMap(Config.unwrap(config), make))
