/**
 * Workflows: the policy for one kind of call (`ticket.classify`), keyed by name.
 *
 * @since 0.1.0
 */
import { Duration, Schema } from "effect"
import { ProviderOptions, WorkflowOptions } from "./ModelOptions.js"
import { Label, Labels, Millis, Name, QualityTier, Segment, TargetRef } from "./ModelTarget.js"

/**
 * @since 0.1.0
 * @category Models
 */
export const WorkflowName = Schema.NonEmptyTrimmedString.pipe(
  Schema.maxLength(200),
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/),
  Schema.brand("WorkflowName")
)
/** @since 0.1.0 */
export type WorkflowName = typeof WorkflowName.Type

/**
 * Capabilities every route of the workflow must have.
 *
 * @since 0.1.0
 * @category Models
 */
export class RequiredCapabilities extends Schema.Class<RequiredCapabilities>("@modelgate/core/RequiredCapabilities")({
  vision: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  tools: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  streaming: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** Smallest context window (tokens) a route must have. */
  minContextWindow: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Smallest max-output limit (tokens) a route must have. */
  minOutputTokens: Schema.optional(Schema.Int.pipe(Schema.positive()))
}) {}

/**
 * Structured output of a workflow: the name of its Effect Schema (supplied to the gateway next to
 * the config) and its version.
 *
 * @since 0.1.0
 * @category Models
 */
export class OutputSpec extends Schema.Class<OutputSpec>("@modelgate/core/OutputSpec")({
  /** Looked up among the schemas' own names (`constructor` or `toString` find nothing inherited). */
  schema: Name,
  schemaVersion: Name
}) {}

/**
 * Retry settings. Delays follow exponential backoff with full jitter; a provider's retry-after is
 * the minimum wait.
 *
 * @since 0.1.0
 * @category Models
 */
export class RetryPolicy extends Schema.Class<RetryPolicy>("@modelgate/core/RetryPolicy")({
  baseDelay: Schema.optionalWith(Millis, { default: () => Duration.millis(200) }),
  maxDelay: Schema.optionalWith(Millis, { default: () => Duration.seconds(5) }),
  factor: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThanOrEqualTo(1), Schema.lessThanOrEqualTo(10)), {
    default: () => 2
  })
}) {}

/**
 * What to answer without a model when every route failed for availability reasons.
 *
 * - `static`: a fixed value (validated against the output schema at startup).
 * - `handler`: a named function supplied in code (`degradeHandlers`), e.g. keyword rules.
 *
 * @since 0.1.0
 * @category Models
 */
export const DegradeSpec = Schema.Union(
  Schema.TaggedStruct("static", { value: Schema.Unknown }),
  Schema.TaggedStruct("handler", { name: Name })
)
/** @since 0.1.0 */
export type DegradeSpec = typeof DegradeSpec.Type

/**
 * Risk of a workflow's or a command's task. `HIGH` keeps only targets with a verified quality
 * score of at least the workflow's `qualityThreshold` on the task segment (`QUALITY_UNVERIFIED`).
 *
 * @since 0.4.0
 * @category Models
 */
export const Risk = Schema.Literal("LOW", "MEDIUM", "HIGH")
/** @since 0.4.0 */
export type Risk = typeof Risk.Type

/**
 * How a workflow orders its eligible targets: `ordered` (route order, the default) or `scored`
 * (by `Router.score`, ties in route order).
 *
 * @since 0.4.0
 * @category Models
 */
export const Selection = Schema.Literal("ordered", "scored")
/** @since 0.4.0 */
export type Selection = typeof Selection.Type

const Weight = Schema.Number.pipe(Schema.between(0, 1))

/**
 * Weights of the score's terms; each omitted one keeps its default (`Router.defaultWeights`:
 * quality 0.45, latency 0.20, cost 0.15, health 0.10, affinity 0.10).
 *
 * @since 0.4.0
 * @category Models
 */
export class ScoreWeights extends Schema.Class<ScoreWeights>("@modelgate/core/ScoreWeights")({
  quality: Schema.optional(Weight),
  latency: Schema.optional(Weight),
  cost: Schema.optional(Weight),
  health: Schema.optional(Weight),
  affinity: Schema.optional(Weight)
}) {}

/**
 * Settings of scored selection.
 *
 * @since 0.4.0
 * @category Models
 */
export class ScoringPolicy extends Schema.Class<ScoringPolicy>("@modelgate/core/ScoringPolicy")({
  weights: Schema.optional(ScoreWeights),
  /** A call with less time than this (its timeout) puts fast-latency targets first. Default 2 s. */
  shortDeadline: Schema.optional(Millis),
  /** Subtracted from a deprecated target's score. Default 0.2. */
  deprecatedPenalty: Schema.optional(Weight)
}) {}

/**
 * What a canary's assignment is sticky to: the command's `sessionKey` (a command without one is
 * assigned by its call id), its tenant, or the call id.
 *
 * @since 0.5.0
 * @category Models
 */
export const CanaryStickiness = Schema.Literal("session", "tenant", "call")
/** @since 0.5.0 */
export type CanaryStickiness = typeof CanaryStickiness.Type

/**
 * A canary: a candidate target that gets `share` (0..1, e.g. 0.05) of the workflow's calls, by a
 * hash of the stickiness key and the canary id. On the candidate side it is tried first when it
 * passes every hard constraint the baseline route passes; the route follows as fallback. The
 * candidate may be a target outside `route`. `GatewayConfig.validate` checks the target and that
 * the share is within (0, 1].
 *
 * @since 0.5.0
 * @category Models
 */
export class CanaryPolicy extends Schema.Class<CanaryPolicy>("@modelgate/core/CanaryPolicy")({
  /** Names the canary in evidence and metrics. */
  id: Name,
  /** The candidate target. */
  target: TargetRef,
  /** Share of calls on the candidate side, within (0, 1]. */
  share: Schema.Number,
  stickiness: CanaryStickiness
}) {}

/**
 * What a policy or prompt version left out of a workflow defaults to. Evidence then cannot tell
 * revisions apart, so building a gateway logs a warning once per such workflow.
 *
 * @since 0.3.0
 * @category Constants
 */
export const unversioned = "unversioned"

/**
 * The policy of one workflow.
 *
 * @since 0.1.0
 * @category Models
 */
export class Workflow extends Schema.Class<Workflow>("@modelgate/core/Workflow")({
  name: WorkflowName,
  /** Version of this policy, in evidence. Omitted: {@link unversioned}, with a startup warning. */
  policyVersion: Schema.optionalWith(Name, { default: () => unversioned }),
  /** The prompt's id and version, in evidence. Version omitted: {@link unversioned}, with a startup warning. */
  prompt: Schema.Struct({ id: Name, version: Schema.optionalWith(Name, { default: () => unversioned }) }),
  requires: Schema.optionalWith(RequiredCapabilities, { default: () => RequiredCapabilities.make({}) }),
  /** Structured output; omitted for free text. */
  output: Schema.optional(OutputSpec),
  /** Targets in order, primary first. */
  route: Schema.NonEmptyArray(TargetRef),
  /** End-to-end deadline (at most 24 h); a command may only shorten it. */
  timeout: Millis,
  retry: Schema.optionalWith(RetryPolicy, { default: () => RetryPolicy.make({}) }),
  /** Regions the data may go to (at most 32, each at most 64 characters). */
  regions: Labels,
  /** Data class of the inputs (every route must be allowed to receive it). */
  dataClass: Label,
  allowFallback: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** Input-token limit of one call. */
  maxInputTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /**
   * Input-size limit of one call in characters of text (messages, tool definitions, output schema),
   * checked before anything is counted or sent. Default `Router.defaultMaxInputCharacters`.
   */
  maxInputCharacters: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Default output-token cap of one call. */
  maxOutputTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Default cost cap of one call, in currency units. */
  maxCost: Schema.optional(Schema.Number.pipe(Schema.positive(), Schema.finite())),
  degrade: Schema.optional(DegradeSpec),
  /** Ask the same route once more with the validation error when output is invalid. Off by default. */
  repair: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /**
   * Defaults and allowed ranges of the neutral sampling options (`ModelOptions.WorkflowOptions`):
   * `{ temperature: { default: 0.2, min: 0, max: 1 }, seed: 7 }` (a bare value pins). A command may
   * override within them; a pinned option must be honoured by every route target.
   */
  options: Schema.optional(WorkflowOptions),
  /**
   * Wire fields the neutral options do not model, per provider id (`{ openai: { service_tier: "flex" } }`),
   * checked at startup against each adapter's allowlist; a command cannot override them.
   */
  providerOptions: Schema.optional(ProviderOptions),
  /** `ordered` (omitted: route order, the first eligible target first) or `scored`. */
  selection: Schema.optional(Selection),
  /** Scored selection's weights and thresholds. */
  scoring: Schema.optional(ScoringPolicy),
  /** Risk of the task; a command may raise it. Omitted: `LOW`. */
  risk: Schema.optional(Risk),
  /** Lowest verified score (0..1) on the segment a `HIGH`-risk call accepts. Default 0.8. */
  qualityThreshold: Schema.optional(Weight),
  /** Task segment (task class) whose verified quality applies; a command may name its own. */
  segment: Schema.optional(Segment),
  /** Quality class scored selection prefers; a command may name its own. */
  preferredTier: Schema.optional(QualityTier),
  /** Lowest quality class a target may have (`BELOW_MIN_TIER`); a command may raise it. */
  minQualityTier: Schema.optional(QualityTier),
  /** A candidate target tried first on a sticky share of calls. */
  canary: Schema.optional(CanaryPolicy)
}) {}
