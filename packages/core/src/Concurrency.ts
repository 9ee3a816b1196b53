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
 *   waiter that may use a freed shared permit gets it). A freed permit is handed straight to its
 *   waiter, so nobody can take it in between.
 * - `acquire` / `acquireTarget` take a permit at once when one is free: one synchronous step, no
 *   fiber, no timer, no `Scope`. Only a call that must wait forks one timer, which ends the wait at
 *   the instant `until` (by Effect's `Clock`, so `TestClock` drives it). In memory (and with
 *   {@link layerOff}) the engine takes that step without running an Effect (a private fast path).
 * - **Tie rule.** The wait covers the instants strictly before `until`: a waiter still queued at
 *   `until` gets `undefined`, even when a permit is freed at that very instant (it goes to the next
 *   waiter). Whichever of the two same-instant events runs first, the outcome is the same. The
 *   engine passes the call's deadline, so a call still queued at its deadline fails there with
 *   `DeadlineExceeded` (stage `queue`), and a call granted a permit has time left to use it. A
 *   permit that is free when `acquire` is called is taken whatever `until` says (the fast path
 *   reads no clock).
 * - An interrupted wait leaves nothing behind: no waiter, no permit, no timer. To never lose a
 *   granted permit to an interruption, call `acquire` the way `Effect.Semaphore` is used: inside
 *   `Effect.uninterruptibleMask((restore) => Effect.flatMap(restore(acquire(...)), (permit) => ...))`
 *   with `permit.release()` in the exit handler ({@link withPermit} does exactly this).
 * - Memory is bounded by the tenants that hold or wait for a permit: an idle tenant has no state.
 * - Undeclared tenants (the policy chosen here) have no reserved permits and use the shared pool
 *   up to `undeclaredMax` (default: the whole pool). With no shared pool they wait until their
 *   deadline; to reject unknown tenants outright, declare tenants in `Budgets` (its default
 *   rejects them before a permit is asked for).
 * - `targets` caps in-flight attempts per target ref, to protect a provider (a self-hosted model).
 * - `workflows` declares a workflow's share of each tenant's permits (the tenant's permits per
 *   workflow, `slot(tenant, workflow)`): `max` caps the permits one tenant's calls of the workflow
 *   hold at once; `reserved` keeps that many of the tenant's permits for the workflow, so the
 *   tenant's other workflows take at most the tenant's limit minus the others' reservations.
 *   Reservations are kept from the tenant's other workflows, not from other tenants (that is the
 *   tenant's own `reserved`). Waiting is FIFO per tenant and workflow: a workflow at its cap does not
 *   hold up the tenant's other workflows. The reservations must fit every tenant's limit (checked
 *   at startup: `WORKFLOW_RESERVED_ABOVE_TENANT_LIMIT`). A call still queued at its deadline fails
 *   `DeadlineExceeded` (stage `queue`) naming the limit that held it (`permitLimit`).
 *
 * **Store.** Permits live in a `PermitStore`: `layerMemory` and `make` use this process's memory
 * (with the synchronous fast path); {@link layer} and {@link layerConfig} use the store in the
 * context (Redis: `@modelgate/adapters/redis`, several processes sharing one set of limits, with
 * leases and waiting bounded by the deadline). A call does one `acquire` and one `release` per permit;
 * `acquire` fails with `StoreError` (`store: "permit"`) when a shared store cannot answer, and the
 * engine then refuses the call (fails closed). In memory nothing fails.
 *
 * @since 0.1.0
 */
import { Config, Context, Effect, Layer } from "effect"
import type { ConfigError } from "effect"
import { GatewayConfigError } from "./Errors.js"
import type { StoreError } from "./Errors.js"
import * as FastPath from "./internal/fastPath.js"
import type { PermitLimit, Share } from "./internal/permitTypes.js"
import type { TenantId } from "./ModelCommand.js"
import * as PermitStore from "./PermitStore.js"
import type { TargetRef } from "./ModelTarget.js"
import { decodeSection } from "./internal/configSection.js"

import type * as Config_ from "./internal/concurrencyConfig.js"
import { ConcurrencyConfig, tenantLimit, validate, workflowsReserved } from "./internal/concurrencyConfig.js"
import { noopPermit } from "./internal/permitTypes.js"

/**
 * A held permit. `release` is synchronous and idempotent: the first call gives the permit back (to
 * the next waiter, if any), later calls do nothing.
 *
 * @since 0.2.0
 * @category Models
 */
export type Permit = PermitStore.Permit

const succeedNoop: Effect.Effect<Permit | undefined> = Effect.succeed(noopPermit)
const takeNoop = (): Permit => noopPermit

const acquireNoop = () => succeedNoop
const acquireTargetNoop = () => succeedNoop

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
   * Takes a permit of `tenant` now if one is free (no fiber, no timer, no scope); otherwise waits
   * FIFO until the epoch-ms instant `until` (by Effect's `Clock`, so `TestClock` drives it;
   * `Infinity` waits without a bound). `undefined` when none came before `until` (see the tie rule
   * in the module doc). Interrupting the wait leaves nothing behind (no permit held, no waiter
   * queued). `capability` (the workflow name) counts against the workflow's share of the
   * tenant's permits (`workflows`); a wait that ends without a permit first tells `onRefused` the
   * limit it hit (since 0.3.0).
   */
  readonly acquire: (
    tenant: TenantId,
    capability: string,
    until: number,
    onRefused?: ((limit: PermitLimit) => void) | undefined
  ) => Effect.Effect<Permit | undefined, StoreError>
  /**
   * Same for a target's concurrency cap; an uncapped target gets a shared permit that holds nothing at
   * once.
   */
  readonly acquireTarget: (target: TargetRef, until: number) => Effect.Effect<Permit | undefined, StoreError>
  /** Whether `target` has a concurrency cap (uncapped targets need no permit: the hot path skips it). */
  readonly isCapped: (target: TargetRef) => boolean
  /**
   * Free share (0..1) of a capped target's permits, counting those this process holds; `undefined`
   * for an uncapped target (and over a pool without `PermitStore.Pool.heldHere`). Scored routing
   * reads it as the route's concurrency headroom. Optional: a service without it reports no
   * headroom.
   */
  readonly targetHeadroom?: ((target: TargetRef) => number | undefined) | undefined
  readonly snapshot: Effect.Effect<Snapshot>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Concurrency extends Context.Tag("@modelgate/core/Concurrency")<Concurrency, Service>() {}

/**
 * Runs `self` holding a permit of `tenant`, waiting for one without a bound (interruptible). The
 * permit is returned when `self` ends, however it ends.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withPermit =
  (tenant: TenantId, capability: string) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R | Concurrency> =>
    Effect.flatMap(Concurrency, (c) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(restore(c.acquire(tenant, capability, Number.POSITIVE_INFINITY)), (permit) =>
          // An unbounded wait ends only with a permit (or an interruption).
          Effect.ensuring(
            restore(self),
            Effect.sync(() => permit?.release())
          )
        )
      )
    )

const emptySnapshot: Snapshot = {
  inUse: 0,
  sharedInUse: 0,
  waiting: 0,
  tenants: 0,
  byTenant: new Map(),
  targets: new Map()
}

/**
 * Concurrency off: every `acquire` gets a shared permit that holds nothing at once.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerOff: Layer.Layer<Concurrency> = Layer.sync(Concurrency, () =>
  FastPath.attach(
    Concurrency.of({
      acquire: acquireNoop,
      acquireTarget: acquireTargetNoop,
      isCapped: () => false,
      snapshot: Effect.succeed(emptySnapshot)
    }),
    { _tag: "Concurrency", acquire: takeNoop, acquireTarget: takeNoop }
  )
)

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/**
 * Concurrency options (decodable from JSON, see {@link decode}): total `permits`, per-tenant
 * `reserved` and `max`, `undeclaredMax`, per-target caps (`targets`) and per-workflow shares
 * (`workflows`).
 *
 * @since 0.1.0
 * @category Models
 */
export type Options = Config_.Options

/**
 * Decodes a concurrency configuration from plain JSON and validates it. A failure lists every
 * problem with its path (`concurrency.tenants.acme.max`), never a value.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const decode: (input: unknown) => Effect.Effect<Options, GatewayConfigError> = decodeSection(
  ConcurrencyConfig,
  "concurrency",
  validate
)

// ---------------------------------------------------------------------------------------------
// Implementation over a PermitStore
// ---------------------------------------------------------------------------------------------

/**
 * Permits over `store`'s pools (one for tenants, one per capped target). Over the memory store
 * ({@link PermitStore.memory}) the engine takes free permits without an Effect (a private fast
 * path); over a shared store every permit is one store operation. Fails with
 * one `GatewayConfigError` listing every problem of `options`.
 *
 * @since 0.2.0
 * @category Constructors
 *
 * @internal
 */
export const makeWith = (options: Options, store: PermitStore.Service): Effect.Effect<Service, GatewayConfigError> =>
  Effect.suspend(() => {
    const problems = validate(options)
    if (problems.length > 0) return Effect.fail(new GatewayConfigError({ problems }))
    const declared = new Map(Object.entries(options.tenants ?? {}))
    let reservedTotal = 0
    for (const t of declared.values()) reservedTotal += t.reserved ?? 0
    const shared = options.permits - reservedTotal
    const shares = sharesOf(options)
    const tenants = store.pool({
      name: "tenants",
      shared,
      reservedOf: (key) => declared.get(key)?.reserved ?? 0,
      maxOf: (key) => {
        const t = declared.get(key)
        return t === undefined ? (options.undeclaredMax ?? shared) : tenantLimit(t, shared)
      },
      ...(shares === undefined ? {} : { shareOf: (sub) => shares.get(sub), sharesReserved: workflowsReserved(options) })
    })
    // Without declared shares the workflow plays no part: the pool is keyed by tenant alone.
    const subOf = (capability: string | undefined): string | undefined =>
      shares === undefined ? undefined : capability
    const targets = new Map<string, PermitStore.Pool>()
    for (const [ref, cap] of Object.entries(options.targets ?? {})) {
      targets.set(ref, store.pool({ name: `target:${ref}`, shared: cap, reservedOf: () => 0, maxOf: () => cap }))
    }
    const acquire: Service["acquire"] = (tenant, capability, until, onRefused) =>
      tenants.acquire(tenant, until, subOf(capability), onRefused)
    const caps = new Map(Object.entries(options.targets ?? {}))
    const acquireTarget: Service["acquireTarget"] = (target, until) => {
      const permits = targets.get(target)
      return permits === undefined ? succeedNoop : permits.acquire(target, until)
    }
    const service = Concurrency.of({
      acquire,
      acquireTarget,
      isCapped: (target) => targets.has(target),
      // Without any cap there is no headroom to read (the router then skips it per target). The
      // permits this process holds come from the target's pool (no count of our own per permit).
      targetHeadroom:
        caps.size === 0
          ? undefined
          : (target) => {
              const cap = caps.get(target)
              const held = targets.get(target)?.heldHere?.(target)
              return cap === undefined || held === undefined ? undefined : Math.max(0, (cap - held) / cap)
            },
      snapshot: Effect.map(
        Effect.all([
          tenants.snapshot,
          Effect.forEach(targets, ([ref, p]) => Effect.map(p.snapshot, (s) => [ref, s] as const))
        ]),
        ([t, byRef]) => {
          const byTarget = new Map<string, { inUse: number; waiting: number }>()
          for (const [ref, s] of byRef) byTarget.set(ref, { inUse: s.inUse, waiting: s.waiting })
          return {
            inUse: t.inUse,
            sharedInUse: t.sharedInUse,
            waiting: t.waiting,
            tenants: t.keys,
            byTenant: t.byKey,
            targets: byTarget
          }
        }
      )
    })
    return Effect.succeed(withFastPath(service, tenants, targets, subOf, shares !== undefined))
  })

/** The declared workflow shares (`max` defaults to no cap), `undefined` when there are none. */
const sharesOf = (options: Options): ReadonlyMap<string, Share> | undefined => {
  const entries = Object.entries(options.workflows ?? {})
  if (entries.length === 0) return undefined
  return new Map(
    entries.map(([name, w]) => [name, { max: w.max ?? Number.POSITIVE_INFINITY, reserved: w.reserved ?? 0 }] as const)
  )
}

/** The service with the synchronous fast path attached, when every pool answers without I/O. */
const withFastPath = (
  service: Service,
  tenants: PermitStore.Pool,
  targets: ReadonlyMap<string, PermitStore.Pool>,
  subOf: (capability: string | undefined) => string | undefined,
  workflowShares: boolean
): Service => {
  const tenantsFast = FastPath.pool(tenants)
  const targetsFast = new Map<string, FastPath.PoolFast>()
  for (const [ref, p] of targets) {
    const fast = FastPath.pool(p)
    if (fast !== undefined) targetsFast.set(ref, fast)
  }
  // A shared store: the tenants' pool, for an admission that takes its permit with the reservation
  // (not with workflow shares: the joint script knows the tenant's limits only).
  if (tenantsFast === undefined) {
    return workflowShares ? service : FastPath.attach(service, { _tag: "ConcurrencyPools", tenants })
  }
  if (targetsFast.size !== targets.size) return service
  return FastPath.attach(service, {
    _tag: "Concurrency",
    acquire: (tenant, workflow) => tenantsFast.take(tenant, subOf(workflow)),
    acquireTarget: (target) => {
      const permits = targetsFast.get(target)
      return permits === undefined ? noopPermit : permits.take(target)
    }
  })
}

/**
 * In-memory permits (this process only). Fails with one `GatewayConfigError` listing every problem
 * of `options`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Service, GatewayConfigError> =>
  makeWith(options, PermitStore.memory)

/**
 * Permits over the `PermitStore` in the context (a shared store: several processes, one set of
 * limits).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<Concurrency, GatewayConfigError, PermitStore.PermitStore> =>
  Layer.effect(
    Concurrency,
    Effect.flatMap(PermitStore.PermitStore, (store) => makeWith(options, store))
  )

/**
 * In-memory permits as a Layer.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory = (options: Options): Layer.Layer<Concurrency, GatewayConfigError> =>
  Layer.effect(Concurrency, make(options))

/**
 * {@link layer} with options read from `Config` (each field may be a `Config`), over the
 * `PermitStore` in the context (in memory: `PermitStore.layerMemory`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<Concurrency, GatewayConfigError | ConfigError.ConfigError, PermitStore.PermitStore> =>
  Layer.effect(
    Concurrency,
    Effect.flatMap(Config.unwrap(config), (options) =>
      Effect.flatMap(PermitStore.PermitStore, (store) => makeWith(options, store))
    )
  )
