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
  "OPTION_UNSUPPORTED"
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
 * @since 0.1.0
 * @category Models
 */
export class RouteDecision extends Schema.Class<RouteDecision>("@modelgate/core/RouteDecision")({
  workflow: Schema.String,
  policyVersion: Schema.String,
  /** Eligible targets in route order; the first is selected, the rest are the fallback order. */
  eligible: Schema.Array(TargetRef),
  excluded: Schema.Array(ExcludedTarget),
  /**
   * Estimated input tokens the decision was made for; absent when no limit needed a count (no
   * finite budget, cost cap or input limit, and the input certainly fits every context window).
   */
  estimatedInputTokens: Schema.optional(Schema.Int)
}) {
  /** The selected target, if any. */
  get selected(): TargetRef | undefined {
    return this.eligible[0]
  }
}
