/**
 * Tenants the host vouches for. The tenant a call runs for is an identity the host supplies at its
 * edge (from an authenticated request: a verified token, an API key, a session), not a string a
 * caller can set: `Tenancy.vouch(identity)` puts it in the context of the effect that calls the
 * gateway, and the gateway reads it there.
 *
 * What a vouched identity unlocks, and what it guards:
 *
 * - targets dedicated to tenants (`ModelTarget.tenants`: a tenant's own deployment, with its own
 *   credential through its own provider id) serve only calls vouched for one of those tenants:
 *   every other call excludes them as `TENANT_NOT_ALLOWED`, whatever the command says;
 * - workflows bound to tenants (`Workflow.tenants`) serve only calls vouched for one of them;
 * - with `GatewayConfig.requireVouchedTenant`, every call needs one;
 * - a command whose `tenant` is not the vouched tenant is refused before anything
 *   (`PolicyViolation` `TENANT_MISMATCH`): no field of a command reaches another tenant's budget,
 *   permits, deployment or credential.
 *
 * The call's evidence and CallRecord say who vouched (`evidence.identity`).
 *
 * @since 0.2.0
 */
import { Context, Effect, Schema } from "effect"
import { dual } from "effect/Function"

/**
 * A tenant id: 1–200 characters, `[A-Za-z0-9][A-Za-z0-9._:-]*`.
 *
 * @since 0.1.0
 * @category Models
 */
export const TenantId = Schema.NonEmptyTrimmedString.pipe(
  Schema.maxLength(200),
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/),
  Schema.brand("TenantId")
)
/** @since 0.1.0 */
export type TenantId = typeof TenantId.Type

/**
 * Who the host says the caller is: the tenant, who vouched for it (`authority`: e.g. `"api-key"`,
 * `"oidc:https://issuer"`) and, optionally, the authenticated subject (a key id, a user id). The
 * subject is recorded in evidence: put an opaque id there, never a secret or personal data.
 *
 * @since 0.2.0
 * @category Models
 */
export const Identity = Schema.Struct({
  tenant: TenantId,
  authority: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  subject: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
}).annotations({ identifier: "@modelgate/core/Tenancy/Identity" })
/** @since 0.2.0 */
export interface Identity extends Schema.Schema.Type<typeof Identity> {}

/**
 * The identity the host vouched for in this context, if any (default: none).
 *
 * @since 0.2.0
 * @category Context
 */
export class CurrentIdentity extends Context.Reference<CurrentIdentity>()("@modelgate/core/Tenancy/CurrentIdentity", {
  defaultValue: (): Identity | undefined => undefined
}) {}

/**
 * Runs `self` with `identity` vouched for: gateway calls inside it run for `identity.tenant`.
 * Call it at the edge, where the request was authenticated.
 *
 * @since 0.2.0
 * @category Combinators
 */
export const vouch: {
  (identity: Identity): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, identity: Identity): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, identity: Identity): Effect.Effect<A, E, R> =>
    Effect.provideService(self, CurrentIdentity, identity)
)

/**
 * Whether a target dedicated to `tenants` (absent: shared) may serve a call vouched for
 * `identity` (absent: nobody vouched).
 *
 * @internal
 */
export const serves = (tenants: ReadonlyArray<TenantId> | undefined, identity: Identity | undefined): boolean =>
  tenants === undefined || (identity !== undefined && tenants.includes(identity.tenant))
