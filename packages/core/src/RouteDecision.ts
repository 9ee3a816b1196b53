/**
 * The router's answer for one request: which targets may be used, in which order, and why every
 * other target was excluded.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { TargetRef } from "./ModelTarget.js"

/**
 * Why a target was not eligible.
 *
 * @since 0.1.0
 * @category Models
 */
export const ExclusionReason = Schema.Literal(
  "CAPABILITY_MISSING",
  "SCHEMA_FEATURE_UNSUPPORTED",
  "DATA_REGION_MISMATCH",
  "DATA_CLASS_NOT_ALLOWED",
  "CONTEXT_TOO_SMALL",
  "BREAKER_OPEN",
  "BUDGET_DOES_NOT_FIT",
  "DISABLED",
  "FALLBACK_NOT_ALLOWED",
  /** The request sets (or its workflow pins) a sampling option the target does not accept. */
  "OPTION_UNSUPPORTED",
  /** A `HIGH`-risk call and no verified score at or above the workflow's threshold on its segment. */
  "QUALITY_UNVERIFIED",
  /** The target's quality class is below the call's `minQualityTier` (or it declares none). */
  "BELOW_MIN_TIER"
)
/** @since 0.1.0 */
export type ExclusionReason = typeof ExclusionReason.Type

/**
 * Longest `detail` of an {@link ExcludedTarget}; a longer one (e.g. a long region list) is cut and
 * ends with {@link truncationMark}.
 *
 * @since 0.2.0
 * @category Constants
 */
export const maxDetailLength = 256

/**
 * What ends a detail cut to {@link maxDetailLength}.
 *
 * @since 0.2.0
 * @category Constants
 */
export const truncationMark = "…(truncated)"

/**
 * `detail` cut to {@link maxDetailLength} characters, marked as truncated when cut.
 *
 * @since 0.2.0
 * @category Utils
 */
export const boundDetail = (detail: string): string =>
  detail.length <= maxDetailLength
    ? detail
    : `${detail.slice(0, maxDetailLength - truncationMark.length)}${truncationMark}`

/**
 * @since 0.1.0
 * @category Models
 */
export class ExcludedTarget extends Schema.Class<ExcludedTarget>("@modelgate/core/ExcludedTarget")({
  target: TargetRef,
  reason: ExclusionReason,
  /**
   * Short machine-made detail (`missing: vision`, `region us not in [eu]`); never request content.
   * At most {@link maxDetailLength} characters: the constructor cuts a longer one, however the
   * target is built (validated, with `disableValidation`, or decoded).
   */
  detail: Schema.String
}) {
  constructor(
    props: { readonly target: TargetRef; readonly reason: ExclusionReason; readonly detail: string },
    options?: Schema.MakeOptions
  ) {
    super(props.detail.length <= maxDetailLength ? props : { ...props, detail: boundDetail(props.detail) }, options)
  }
}

/**
 * Why the first eligible target was selected: `PINNED_ORDER` (an `ordered` workflow), `BEST_SCORE`
 * (the highest score), `FAST_TIER` (a short deadline put fast-latency targets first), `ONLY_ELIGIBLE`,
 * `STICKY` (session affinity decided), `ESCALATED` (the command's `escalate` put a stronger quality
 * class first), `ESCALATION_UNAVAILABLE` (`escalate` asked, no eligible target of a stronger class),
 * `CANARY` (the workflow's canary candidate leads).
 *
 * @since 0.4.0
 * @category Models
 */
export const SelectionReason = Schema.Literal(
  "PINNED_ORDER",
  "BEST_SCORE",
  "FAST_TIER",
  "ONLY_ELIGIBLE",
  "STICKY",
  "ESCALATED",
  "ESCALATION_UNAVAILABLE",
  /** The workflow's canary assigned the call to the candidate side and the candidate leads. */
  "CANARY"
)
/** @since 0.4.0 */
export type SelectionReason = typeof SelectionReason.Type

/**
 * Health of a scored target from its route health (`Router.degradedBelow`): `HEALTHY` or `DEGRADED`.
 *
 * @since 0.4.0
 * @category Models
 */
export const HealthStatus = Schema.Literal("HEALTHY", "DEGRADED")
/** @since 0.4.0 */
export type HealthStatus = typeof HealthStatus.Type

/**
 * The score of one eligible target under scored selection, term by term (each 0..1, rounded to
 * 4 decimals), and the weighted `total` the order follows. A plain object (built per decision).
 *
 * @since 0.4.0
 * @category Models
 */
export const TargetScore = Schema.Struct({
  target: TargetRef,
  quality: Schema.Number,
  latency: Schema.Number,
  cost: Schema.Number,
  health: Schema.Number,
  /** From the route's health record; absent when the health service keeps none for the target. */
  status: Schema.optional(HealthStatus),
  affinity: Schema.Number,
  /** Subtracted for a deprecated target (0 otherwise). */
  penalty: Schema.Number,
  total: Schema.Number
}).annotations({ identifier: "@modelgate/core/TargetScore" })
/** @since 0.4.0 */
export interface TargetScore extends Schema.Schema.Type<typeof TargetScore> {}

/**
 * The side of a workflow's canary a call was assigned: `candidate` (the candidate leads) or
 * `baseline` (the route as configured; also when the candidate side's candidate was not eligible,
 * which `skipped` then says).
 *
 * @since 0.5.0
 * @category Models
 */
export const CanaryAssignment = Schema.Struct({
  id: Schema.String,
  side: Schema.Literal("candidate", "baseline"),
  /** Assigned to the candidate side but the candidate was not eligible (its reason is in `excluded`). */
  skipped: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "@modelgate/core/CanaryAssignment" })
/** @since 0.5.0 */
export interface CanaryAssignment extends Schema.Schema.Type<typeof CanaryAssignment> {}

/**
 * @since 0.1.0
 * @category Models
 */
export class RouteDecision extends Schema.Class<RouteDecision>("@modelgate/core/RouteDecision")({
  workflow: Schema.String,
  policyVersion: Schema.String,
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
  selectionReason: Schema.optional(SelectionReason),
  /**
   * Scored selection: the score of every target that passed the hard filters, best first (the
   * eligible order; with `allowFallback: false` all but the first are excluded as
   * `FALLBACK_NOT_ALLOWED`).
   */
  scores: Schema.optional(Schema.Array(TargetScore)),
  /** The workflow's canary and the side this call was assigned (absent without a canary). */
  canary: Schema.optional(CanaryAssignment)
}) {
  /** The selected target, if any. */
  get selected(): TargetRef | undefined {
    return this.eligible[0]
  }
}
