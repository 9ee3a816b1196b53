/**
 * The data a configuration compiles to, below both `GatewayConfig` (which builds it) and the modules
 * that read it (the router, the lifecycle, the engine): types only, so no module has to import
 * `GatewayConfig` to name a compiled workflow.
 */
import type { Effect, Either, ParseResult, Schema } from "effect"
import type { ModelCommand } from "../ModelCommand.js"
import type * as ModelOptions from "../ModelOptions.js"
import type { ModelTarget } from "../ModelTarget.js"
import type { Workflow } from "../Workflow.js"

/**
 * A degraded-mode answer computed in code (e.g. keyword rules), used when every route failed for
 * availability reasons. Its value is validated against the workflow's output schema.
 *
 * @since 0.1.0
 * @category Models
 */
export type DegradeHandler = (command: ModelCommand) => Effect.Effect<unknown>

/**
 * A check on a workflow's validated value: true when a stronger target should answer again.
 *
 * @since 0.2.0
 * @category Models
 */
export type EscalationCheck = (value: unknown) => boolean

/** The lifecycle features of one compiled workflow; absent when it uses none. */
export interface Features {
  /** The canary has a rollout: its share is the controller's and its calls are observed. */
  readonly rollout: boolean
  /** The shadow candidate, resolved. */
  readonly shadowTarget: ModelTarget | undefined
  /** Quality signals demote or exclude targets of this workflow. */
  readonly quality: boolean
}

/**
 * A workflow with its resolved output schema and JSON Schema (computed once at startup).
 *
 * @since 0.1.0
 * @category Models
 */
export interface CompiledWorkflow {
  readonly workflow: Workflow
  readonly schema: Schema.Schema.AnyNoContext | undefined
  /** The schema's decoder, built once (every error collected). */
  readonly decode: ((u: unknown) => Either.Either<unknown, ParseResult.ParseError>) | undefined
  readonly jsonSchema: Record<string, unknown> | undefined
  readonly features: ReadonlySet<string>
  readonly targets: ReadonlyArray<ModelTarget>
  readonly degrade: DegradeHandler | undefined
  /** Per provider id, the provider-option fields its adapter allows (for commands' `providerOptions`). */
  readonly providerOptionAllowlists: ReadonlyMap<string, ModelOptions.ProviderOptionsAllowlist>
  /** The workflow's escalation check (`workflow.escalation.check`), resolved; absent without one. */
  readonly escalationCheck?: EscalationCheck | undefined
  /** The canary's candidate target (`workflow.canary`), resolved; absent without a canary. */
  readonly canaryTarget?: ModelTarget | undefined
  /** A policy or prompt canary: the workflow as its candidate side runs it (absent otherwise). */
  readonly canaryVariant?: CompiledWorkflow | undefined
  /** The lifecycle features the workflow uses (absent: none, nothing runs per call for them). */
  readonly lifecycle?: Features | undefined
  /** Calls need a tenant the host vouched for (`Workflow.tenants`, `GatewayConfig.requireVouchedTenant`). */
  readonly vouchedOnly?: boolean | undefined
}
