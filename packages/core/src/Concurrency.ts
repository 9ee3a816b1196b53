/**
 * Concurrency permits per tenant.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import type { TenantId } from "./ModelCommand.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Waits (FIFO) for a permit of `tenant` for `capability`; released when the scope closes. */
  readonly acquire: (tenant: TenantId, capability: string) => Effect.Effect<void, never, Scope.Scope>
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

/**
 * No limit.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerUnbounded: Layer.Layer<Concurrency> = Layer.succeed(
  Concurrency,
  Concurrency.of({ acquire: () => Effect.void })
)
