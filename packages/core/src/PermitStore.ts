/**
 * The persistence seam of `Concurrency`: pools of permits, each with a shared part, a reserved
 * share per key and a maximum per key. `Concurrency` asks its store for two kinds of pool: one for
 * tenants (`tenants`) and one per capped target (`target:<ref>`). The memory store (this process
 * only) lives here; a shared store (Redis, `@modelgate/adapters/redis`) lets several gateway
 * processes share one set of limits.
 *
 * Details
 *
 * - A key (a tenant, a target ref) uses its reserved permits first, then the shared part, never
 *   more than its maximum: `held(k) ≤ max(k)` and `Σ max(0, held(k) − reserved(k)) ≤ shared`.
 * - `acquire(key, until)` takes a permit at once when one is free, otherwise waits until the
 *   epoch-ms instant `until` (by Effect's `Clock`) and answers `undefined` when none came before it.
 *   A waiter still queued at `until` gets `undefined` (the tie rule of `Concurrency`).
 * - The memory pool also takes a free permit without running an Effect (a private fast path
 *   `Concurrency` reads); a remote pool has none, and every permit is one store operation.
 * - A remote pool grants every permit with a lease: a holder that crashed (never released) gives
 *   its permit back when the lease ends. `Permit.release` stays synchronous: a remote pool sends the
 *   release without waiting for it, and a lost release is covered by the lease.
 * - `acquire` fails with `StoreError` (`store: "permit"`) when the store cannot answer: the engine
 *   refuses the call (fails closed), like a budget it cannot reserve.
 *
 * @since 0.2.0
 */
import { Context, Layer } from "effect"
import type { Permit, Pool, PoolOptions, PoolSnapshot, Service } from "./internal/permitTypes.js"
import { Permits } from "./internal/permits.js"

export type { Permit, Pool, PoolOptions, PoolSnapshot, Service }

/**
 * @since 0.2.0
 * @category Context
 */
export class PermitStore extends Context.Tag("@modelgate/core/PermitStore")<PermitStore, Service>() {}

/**
 * Permits in this process's memory: every operation is synchronous (hence atomic) and never fails;
 * waiting is strictly FIFO per key, and across keys for the shared part; a freed permit is handed
 * straight to its waiter. Each pool takes a free permit at once, so `Concurrency` keeps its
 * synchronous fast path.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const memory: Service = PermitStore.of({ pool: (options) => new Permits(options) })

/**
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<PermitStore> = Layer.succeed(PermitStore, memory)
