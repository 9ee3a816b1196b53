/**
 * The schemas of the literal and branded strings that only the engine decodes or builds: their
 * types stay public in the modules that name them (`ModelResult.CallOutcome` …), their values live
 * here so the public surface is the API.
 */
import { Schema } from "effect"

/** The schema of `ModelResult.CallId`. */
export const CallId = Schema.String.pipe(Schema.brand("CallId"))

/**
 * The temporary failure kinds: each `ProviderAdapter.ProviderError` `kind` here becomes the
 * `Errors.ProviderUnavailable` `reason` of the same name (`Disposition.failureOf`).
 */
export const temporaryKinds = [
  "server_error",
  "overloaded",
  "transport",
  "timeout",
  "stream_stalled",
  "stream_truncated"
] as const

/**
 * The permanent rejections: each `ProviderAdapter.ProviderError` `kind` here becomes the
 * `Errors.ProviderRejected` `reason` of the same name (`Disposition.failureOf`).
 */
export const rejectedKinds = [
  "authentication",
  "permission",
  "quota_exhausted",
  "spend_cap",
  "model_not_found",
  "request_too_large"
] as const

/** The schema of `ModelResult.CallOutcome`. */
export const CallOutcome = Schema.Literal("success", "degraded", "failed", "cancelled", "incomplete")

/** The schema of `ModelResult.FinishReason`. */
export const FinishReason = Schema.Literal("stop", "length", "tool_calls", "content_filter", "refusal", "other")

/** The schema of `ModelTarget.QualityTier`. */
export const QualityTier = Schema.Literal("low", "standard", "high")

/** The schema of `RouteDecision.ExclusionReason`. */
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
  "BELOW_MIN_TIER",
  /** An embedding workflow's target whose vectors are of another family or length (`Workflow.embedding`). */
  "EMBEDDING_INCOMPATIBLE",
  /** Scored selection: the route's health record says `UNAVAILABLE` (see the health record's `status`). */
  "UNHEALTHY",
  /** The target's quality regressed on this workflow past its `quality.excludeAbove` (`QualitySignals`). */
  "QUALITY_REGRESSION",
  /** The target's provider rate limit (`ModelTarget.rateLimit`) has no headroom in this minute (`RateLimits`). */
  "RATE_LIMITED_LOCAL",
  /**
   * A target dedicated to other tenants (`ModelTarget.tenants`), or a workflow bound to other
   * tenants (`Workflow.tenants`): the call's tenant is not vouched for one of them (`Tenancy`).
   */
  "TENANT_NOT_ALLOWED",
  /** The call needs a tenant the host vouched for (`Tenancy.vouch`) and runs without one. */
  "TENANT_NOT_VOUCHED",
  /** The command names a tenant other than the one the host vouched for. */
  "TENANT_MISMATCH",
  /**
   * The request carries audio in a format, or a file of a media type, that the target does not
   * accept (`capabilities.audioInput`, `capabilities.fileInput`), or the workflow requires one
   * (`requires.audioInput`, `requires.fileInput`).
   */
  "MEDIA_UNSUPPORTED"
)

/** The schema of `RouteDecision.SelectionReason`. */
export const SelectionReason = Schema.Literal(
  "PINNED_ORDER",
  "BEST_SCORE",
  "ONLY_ELIGIBLE",
  "STICKY",
  "PREFIX_AFFINITY",
  "ESCALATION",
  /** The workflow's canary assigned the call to the candidate side and the candidate leads. */
  "CANARY"
)

/** The schema of `Workflow.WorkflowName`. */
export const WorkflowName = Schema.NonEmptyTrimmedString.pipe(
  Schema.maxLength(200),
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/),
  Schema.brand("WorkflowName")
)

/** The schema of `Workflow.Risk`. */
export const Risk = Schema.Literal("LOW", "MEDIUM", "HIGH")

/** The schema of `ModelTarget.SchemaFeature`. */
export const SchemaFeature = Schema.Literal(
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "enum",
  "const",
  "pattern",
  "format",
  "stringLength",
  "numberRange",
  "arrayLength",
  "openObject",
  "optionalProperties",
  "recursiveRef",
  "nullable"
)
