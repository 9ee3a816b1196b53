/**
 * The router's answer for one request: which targets may be used, in which order, and why every
 * other target was excluded.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { TargetRef } from "./ModelTarget.js"
import * as Literals from "./internal/literals.js"
import * as RouteSchemas from "./internal/routeSchemas.js"

/**
 * Why a target was not eligible.
 *
 * @since 0.1.0
 * @category Models
 */
export type ExclusionReason = typeof Literals.ExclusionReason.Type

/**
 * @since 0.1.0
 * @category Models
 */
export class ExcludedTarget extends Schema.Class<ExcludedTarget>("@modelgate/core/ExcludedTarget")({
  target: TargetRef,
  reason: Literals.ExclusionReason,
  /**
   * Short machine-made detail (`missing: vision`, `region us not in [eu]`); never request content.
   * At most 256 characters: the constructor cuts a longer one, however the
   * target is built (validated, with `disableValidation`, or decoded).
   */
  detail: Schema.String
}) {
  constructor(
    props: { readonly target: TargetRef; readonly reason: ExclusionReason; readonly detail: string },
    options?: Schema.MakeOptions
  ) {
    super(
      props.detail.length <= RouteSchemas.maxDetailLength
        ? props
        : { ...props, detail: RouteSchemas.boundDetail(props.detail) },
      options
    )
  }
}

/**
 * Why the first eligible target was selected (the routing spec's names): `PINNED_ORDER` (an
 * `ordered` workflow's route order), `BEST_SCORE` (the highest score; under a short deadline the
 * fast latency class first, which the decision's `required.latencyTier` then says), `STICKY`
 * (session affinity decided), `PREFIX_AFFINITY` (the target that served the prompt's prefix
 * recently leads only thanks to its affinity, `Workflow.prefixAffinity`), `ESCALATION` (an escalation signal put a stronger quality class
 * first), `ONLY_ELIGIBLE` (one target passed the hard filters), `CANARY` (the workflow's canary
 * candidate leads).
 *
 * Renamed in 0.6.0: `ESCALATED` → `ESCALATION`; `FAST_TIER` → `BEST_SCORE` with
 * `required.latencyTier: "fast"`; `ESCALATION_UNAVAILABLE` → the reason the order had, with an
 * `escalation` without `to`.
 *
 * @since 0.2.0
 * @category Models
 */
export type SelectionReason = typeof Literals.SelectionReason.Type

/**
 * Status of a route from its health record: `HEALTHY`, `DEGRADED` (scored
 * down) or `UNAVAILABLE` (excluded from scored selection as `UNHEALTHY`).
 *
 * @since 0.2.0
 * @category Models
 */
export type HealthStatus = typeof RouteSchemas.HealthStatus.Type

/**
 * What raised an escalation: the command's `escalate` (`command`), an answer that failed the
 * output schema (`invalid_output`), or the workflow's escalation check on the validated value
 * (`check`).
 *
 * @since 0.2.0
 * @category Models
 */
export type EscalationSignal = typeof RouteSchemas.EscalationSignal.Type

/**
 * One escalation: from the target (and its quality class) the call was on or would have started
 * on, to the stronger target chosen; `to` absent when no eligible stronger target was left.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Escalation extends Schema.Schema.Type<typeof RouteSchemas.Escalation> {}

/**
 * The requirements a decision applied (values, never content): capabilities the request needs,
 * its estimated context tokens, the regions and data class, risk and segment, the quality classes
 * asked for, and `latencyTier: "fast"` when a short deadline put the fast latency class first.
 *
 * @since 0.2.0
 * @category Models
 */
const RouteRequirements = Schema.Struct({
  minQualityTier: Schema.optional(Literals.QualityTier),
  preferredTier: Schema.optional(Literals.QualityTier),
  latencyTier: Schema.optional(Schema.Literal("fast")),
  tools: Schema.Boolean,
  vision: Schema.Boolean,
  streaming: Schema.Boolean,
  structuredOutput: Schema.Boolean,
  /** Estimated input tokens (absent when nothing needed a count). */
  contextTokens: Schema.optional(Schema.Int),
  regions: Schema.Array(Schema.String),
  dataClass: Schema.String,
  risk: Schema.Literal("LOW", "MEDIUM", "HIGH"),
  segment: Schema.optional(Schema.String)
}).annotations({ identifier: "@modelgate/core/RouteRequirements" })
/** @since 0.2.0 */
export interface RouteRequirements extends Schema.Schema.Type<typeof RouteRequirements> {}

/**
 * The score of one eligible target under scored selection, term by term (each 0..1, rounded to
 * 4 decimals), and the weighted `total` the order follows. A plain object (built per decision).
 *
 * @since 0.2.0
 * @category Models
 */
export interface TargetScore extends Schema.Schema.Type<typeof RouteSchemas.TargetScore> {}

/**
 * The side of a workflow's canary a call was assigned: `candidate` (the candidate leads) or
 * `baseline` (the route as configured; also when the candidate side's candidate was not eligible,
 * which `skipped` then says).
 *
 * @since 0.2.0
 * @category Models
 */
export interface CanaryAssignment extends Schema.Schema.Type<typeof RouteSchemas.CanaryAssignment> {}

/**
 * @since 0.1.0
 * @category Models
 */
export class RouteDecision extends Schema.Class<RouteDecision>("@modelgate/core/RouteDecision")({
  /**
   * Id of the decision: a hash of its outcome (workflow, policy version, reason, whether a short
   * deadline put the fast class first, order, exclusions with their reasons, escalation, canary),
   * so identical outcomes share it and any difference in them shows; requirements that changed no
   * outcome do not change it (absent in decisions recorded before 0.6.0).
   */
  routeId: Schema.optional(Schema.String),
  workflow: Schema.String,
  policyVersion: Schema.String,
  /** The requirements that were applied (absent in decisions recorded before 0.6.0). */
  required: Schema.optional(RouteRequirements),
  /**
   * Eligible targets in order (route order, or score order when scored); the first is selected,
   * the rest are the fallback order.
   */
  eligible: Schema.Array(TargetRef),
  excluded: Schema.Array(ExcludedTarget),
  /**
   * Estimated input tokens the decision was made for; absent when no limit needed a count (no
   * finite budget, cost cap or input limit, and the input certainly fits every context window).
   */
  estimatedInputTokens: Schema.optional(Schema.Int),
  /** Why the first eligible target leads (absent in decisions recorded before 0.4.0). */
  selectionReason: Schema.optional(Literals.SelectionReason),
  /**
   * Scored selection: the score of every target that passed the hard filters, best first (the
   * eligible order; with `allowFallback: false` all but the first are excluded as
   * `FALLBACK_NOT_ALLOWED`).
   */
  scores: Schema.optional(Schema.Array(RouteSchemas.TargetScore)),
  /** The workflow's canary and the side this call was assigned (absent without a canary). */
  canary: Schema.optional(RouteSchemas.CanaryAssignment),
  /** The selected target: the first eligible one (absent when none is). */
  selected: Schema.optional(TargetRef),
  /** The command's `escalate` signal and where it led (absent without one). */
  escalation: Schema.optional(RouteSchemas.Escalation),
  /** The caller's request id (`ModelCommand.requestId`; not part of `routeId`). Since 0.3.0. */
  requestId: Schema.optional(Schema.String)
}) {}

/**
 * FNV-1a (32-bit) over `parts` joined, as 8 hex digits: the decision's `routeId` (`route-…`).
 *
 * @since 0.2.0
 * @category Utils
 *
 * @internal
 */
export const routeIdOf = (parts: ReadonlyArray<string>): string => {
  let h = 0x811c9dc5
  for (const part of parts) {
    for (let i = 0; i < part.length; i++) {
      h ^= part.charCodeAt(i)
      h = Math.imul(h, 0x01000193)
    }
    h ^= 0x1f
    h = Math.imul(h, 0x01000193)
  }
  return `route-${(h >>> 0).toString(16).padStart(8, "0")}`
}
