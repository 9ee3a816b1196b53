/**
 * Workflows: the policy for one kind of call (`ticket.classify`), keyed by name.
 *
 * @since 0.1.0
 */
import { Duration, Schema } from "effect"
import { ProviderOptions, WorkflowOptions } from "./ModelOptions.js"
import {
  AudioFormat,
  Label,
  Labels,
  MediaType,
  maxEmbeddingDimensions,
  Millis,
  Name,
  QualityTier,
  Segment,
  TargetRef
} from "./ModelTarget.js"
import { TenantId } from "./Tenancy.js"

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
  minOutputTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Audio formats every route target must accept (`capabilities.audioInput`): checked at startup. */
  audioInput: Schema.optional(Schema.Array(AudioFormat).pipe(Schema.maxItems(8))),
  /** File media types every route target must accept (`capabilities.fileInput`): checked at startup. */
  fileInput: Schema.optional(Schema.Array(MediaType).pipe(Schema.maxItems(32)))
}) {}

/**
 * The vector space of an embedding workflow: a model family and a vector length. Only targets whose
 * `capabilities.embeddings` match both serve it (others in its route are excluded with
 * `EMBEDDING_INCOMPATIBLE`), so a fallback never mixes vectors of two spaces.
 *
 * @since 0.2.0
 * @category Models
 */
export class EmbeddingSpace extends Schema.Class<EmbeddingSpace>("@modelgate/core/EmbeddingSpace")({
  /** The model family whose vectors the workflow's index holds (`text-embedding-3-small`). */
  family: Name,
  /** Length of every vector. */
  dimensions: Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(maxEmbeddingDimensions))
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
const DegradeSpec = Schema.Union(
  Schema.TaggedStruct("static", { value: Schema.Unknown }),
  Schema.TaggedStruct("handler", { name: Name })
)

/**
 * Risk of a workflow's or a command's task. `HIGH` keeps only targets with a verified quality
 * score of at least the workflow's `qualityThreshold` on the task segment (`QUALITY_UNVERIFIED`).
 *
 * @since 0.2.0
 * @category Models
 */
export const Risk = Schema.Literal("LOW", "MEDIUM", "HIGH")
/** @since 0.2.0 */
export type Risk = typeof Risk.Type

/**
 * How a workflow orders its eligible targets: `ordered` (route order, the default) or `scored`
 * (by `Router.score`, ties in route order).
 *
 * @since 0.2.0
 * @category Models
 */
const Selection = Schema.Literal("ordered", "scored")

const Weight = Schema.Number.pipe(Schema.between(0, 1))

/**
 * Weights of the score's terms; each omitted one keeps its default (
 * quality 0.45, latency 0.20, cost 0.15, health 0.10, affinity 0.10).
 *
 * @since 0.2.0
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
 * @since 0.2.0
 * @category Models
 */
export class ScoringPolicy extends Schema.Class<ScoringPolicy>("@modelgate/core/ScoringPolicy")({
  weights: Schema.optional(ScoreWeights),
  /** A call with less time than this (its timeout) puts fast-latency targets first. Default 2 s. */
  shortDeadline: Schema.optional(Millis),
  /** Subtracted from a deprecated target's score. Default 0.2. */
  deprecatedPenalty: Schema.optional(Weight),
  /**
   * Hysteresis: the workflow's last best-scoring target stays first until another one's score is
   * higher by more than this. Default 0.03.
   */
  switchMargin: Schema.optional(Weight)
}) {}

/**
 * Where a workflow escalates to, and on which signals. Escalation goes to the best eligible
 * target after the current one in the route's order (score order when scored) that is stronger:
 * one of `targets` when set, else of a higher quality class than the current target's and at least
 * `tier`. It stays under the call's hard constraints, deadline and reservation. Signals: the
 * command's `escalate`, an answer failing the output schema (`onInvalidOutput`, after a repair
 * when the workflow repairs), and `check` on the validated value.
 *
 * @since 0.2.0
 * @category Models
 */
export class EscalationPolicy extends Schema.Class<EscalationPolicy>("@modelgate/core/EscalationPolicy")({
  /** Lowest quality class an escalation goes to (omitted: every class above the current target's). */
  tier: Schema.optional(QualityTier),
  /** Only these route targets are escalation targets (in the route's order). */
  targets: Schema.optional(Schema.NonEmptyArray(TargetRef)),
  /** Escalate when an answer fails the output schema. Default true. */
  onInvalidOutput: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /**
   * Name of a check among the definition's `escalationChecks` (`(value) => boolean`, e.g.
   * `confidence < 0.6`): escalate when it returns true for the validated value.
   */
  check: Schema.optional(Name)
}) {}

/**
 * What a canary's assignment is sticky to: the command's `sessionKey` (a command without one is
 * assigned by its call id), its tenant, or the call id.
 *
 * @since 0.2.0
 * @category Models
 */
const CanaryStickiness = Schema.Literal("session", "tenant", "call")

/**
 * How a canary's controller (`CanaryController`) moves its share: after each `window` in which the
 * candidate saw at least `minSamples` calls, it rolls the canary back (share 0) when the candidate is
 * worse than the baseline by more than a threshold, else ramps the share to the next of `steps`
 * (the last step completes the canary). A window with fewer candidate calls changes nothing.
 *
 * @since 0.2.0
 * @category Models
 */
export class CanaryRollout extends Schema.Class<CanaryRollout>("@modelgate/core/CanaryRollout")({
  /** Shares to ramp through, each above the previous and within (0, 1]; e.g. `[0.05, 0.25, 0.5, 1]`. */
  steps: Schema.NonEmptyArray(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))),
  /** Length of one evaluation window. */
  window: Millis,
  /** Candidate calls a window needs before it can roll back or ramp. Default 20. */
  minSamples: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 20 }),
  /** Largest tolerated increase of the error rate over the baseline's (absolute). Default 0.05. */
  maxErrorRateIncrease: Schema.optionalWith(Weight, { default: () => 0.05 }),
  /** Largest tolerated increase of the invalid-output rate over the baseline's (absolute). Default 0.05. */
  maxInvalidOutputRateIncrease: Schema.optionalWith(Weight, { default: () => 0.05 }),
  /** Largest tolerated ratio of the candidate's p95 latency to the baseline's. Default 1.5. */
  maxP95LatencyRatio: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThanOrEqualTo(1)), { default: () => 1.5 }),
  /** Largest tolerated ratio of the candidate's cost per call to the baseline's. Default 1.5. */
  maxCostPerCallRatio: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThanOrEqualTo(1)), { default: () => 1.5 })
}) {}

/**
 * A canary: a candidate that gets `share` (0..1, e.g. 0.05) of the workflow's calls, by a hash of
 * the stickiness key and the canary id. The candidate is a target, a policy version (with its own
 * `route` and `selection`), a prompt version, or a combination. On the candidate side a candidate
 * target is tried first when it passes every hard constraint the baseline route passes; the route
 * follows as fallback. A candidate policy or prompt version is what the evidence records as served
 * (`policyVersion`, `promptVersion`). With `rollout`, a `CanaryController` moves the share.
 * `GatewayConfig.validate` checks the targets, that there is a candidate and that the share is
 * within (0, 1].
 *
 * @since 0.2.0
 * @category Models
 */
export class CanaryPolicy extends Schema.Class<CanaryPolicy>("@modelgate/core/CanaryPolicy")({
  /** Names the canary in evidence and metrics. */
  id: Name,
  /** The candidate target (may be outside `route`). */
  target: Schema.optional(TargetRef),
  /** The candidate policy version: recorded as the policy that served the candidate side. */
  policyVersion: Schema.optional(Name),
  /** The candidate prompt version: recorded as the prompt that served the candidate side. */
  promptVersion: Schema.optional(Name),
  /** The candidate policy's route (default: the workflow's). */
  route: Schema.optional(Schema.NonEmptyArray(TargetRef)),
  /** The candidate policy's selection (default: the workflow's). */
  selection: Schema.optional(Selection),
  /** Share of calls on the candidate side, within (0, 1]: the starting share under `rollout`. */
  share: Schema.Number,
  stickiness: CanaryStickiness,
  /** Automatic rollback and ramping by a `CanaryController`; without it the share is fixed. */
  rollout: Schema.optional(CanaryRollout)
}) {}

/**
 * Prompt-prefix affinity of a scored workflow: a call whose prompt shares a long prefix (a system
 * prompt, a document) with a recent call of the same tenant prefers, within the hard filters and
 * the score, the target that answered it, so the provider's prompt cache is hit (cached input is
 * billed at the target's `cachedInputPerMillion`). The prefix's target gets the affinity term
 * (`scoring.weights.affinity`) while it is healthy; a session's own affinity comes first.
 *
 * @since 0.2.0
 * @category Models
 */
export class PrefixAffinity extends Schema.Class<PrefixAffinity>("@modelgate/core/PrefixAffinity")({
  /**
   * Characters per block of the prompt (default 4,096, about 1,000 tokens: OpenAI caches prompts
   * from 1,024 tokens, Anthropic from 1,024–2,048). Prompts shorter than one block get no affinity.
   */
  blockCharacters: Schema.optionalWith(Schema.Int.pipe(Schema.between(256, 65_536)), { default: () => 4_096 }),
  /** How long a served prefix is remembered (default 5 minutes, the providers' shortest cache life). */
  ttl: Schema.optionalWith(Millis, { default: () => Duration.minutes(5) })
}) {}

/**
 * What a reload that gives a route target a new model (same ref, another `model`) does to a
 * workflow: `switch` (every call moves to the new version) or `canary` (the new version starts as a
 * canary of the old one with `newVersionCanary`'s share, stickiness and rollout).
 *
 * @since 0.2.0
 * @category Models
 */
const OnNewVersion = Schema.Literal("switch", "canary")

/**
 * The canary a new model version starts as under `onNewVersion: "canary"`.
 *
 * @since 0.2.0
 * @category Models
 */
export class NewVersionCanary extends Schema.Class<NewVersionCanary>("@modelgate/core/NewVersionCanary")({
  share: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1)), {
    default: () => 0.05
  }),
  stickiness: Schema.optionalWith(CanaryStickiness, { default: () => "session" as const }),
  rollout: Schema.optional(CanaryRollout)
}) {}

/**
 * Shadow traffic: a sampled `share` of the workflow's successful calls is also sent, off the
 * caller's path, to `target` (at most `maxConcurrent` at a time, the rest dropped), charged to the
 * budget of tenant `budgetTenant`, and written as a `Shadow.ShadowRecord`. Never for a command that
 * offers side-effecting tools, never to a target outside the call's regions or data class.
 *
 * @since 0.2.0
 * @category Models
 */
export class ShadowPolicy extends Schema.Class<ShadowPolicy>("@modelgate/core/ShadowPolicy")({
  target: TargetRef,
  /** Share of successful calls shadowed, within (0, 1]. */
  share: Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1)),
  /** Shadow calls in flight at most; more are dropped. Default 4. */
  maxConcurrent: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 4 }),
  /** The budget tenant shadow calls are charged to. Default `shadow`. */
  budgetTenant: Schema.optionalWith(Name, { default: () => "shadow" })
}) {}

/**
 * Quality demotion (`QualitySignals`): per target, over the last `window`, the invalid-output rate
 * and the rate of calls callers rejected (`feedback`). Past `demoteAbove` (with at least
 * `minSamples` calls) the target's quality fit is scored down by `demotion` until the rate is back
 * at or below `recoverBelow`; past `excludeAbove` it is excluded (`QUALITY_REGRESSION`). An offline
 * eval score on the workflow's segment below `minEvalScore` also demotes it.
 *
 * @since 0.2.0
 * @category Models
 */
export class QualityPolicy extends Schema.Class<QualityPolicy>("@modelgate/core/QualityPolicy")({
  window: Schema.optionalWith(Millis, { default: () => Duration.minutes(5) }),
  minSamples: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 20 }),
  demoteAbove: Schema.optionalWith(Weight, { default: () => 0.1 }),
  /** Default: half of `demoteAbove` (hysteresis: no flapping around one threshold). */
  recoverBelow: Schema.optional(Weight),
  excludeAbove: Schema.optional(Weight),
  /** Subtracted from the quality fit of a demoted target. Default 0.3. */
  demotion: Schema.optionalWith(Weight, { default: () => 0.3 }),
  minEvalScore: Schema.optional(Weight)
}) {}

/**
 * Where a cached answer may be served: `tenant` (to the tenant whose call made it; the default) or
 * `global` (to every tenant; only for a workflow whose `dataClass` is `"public"`, checked at startup).
 *
 * @since 0.2.0
 * @category Models
 */
const CacheScope = Schema.Literal("tenant", "global")
/** @since 0.2.0 */
export type CacheScope = typeof CacheScope.Type

/**
 * The response cache of a workflow (`docs/caching.md`): successful, validated, non-degraded answers
 * are kept for `ttl` and served again to an identical request in `scope`, with no provider call and
 * no spend. Not for embedding workflows; a command offering side-effecting tools is never cached.
 *
 * @since 0.2.0
 * @category Models
 */
export class CachePolicy extends Schema.Class<CachePolicy>("@modelgate/core/CachePolicy")({
  /** How long an answer is served from the cache (> 0, at most 24 h). */
  ttl: Millis,
  /** `tenant` (default) or `global` (a `"public"` data class only). */
  scope: Schema.optionalWith(CacheScope, { default: () => "tenant" as const })
}) {}

/**
 * The data class a workflow must have for a `global` cache scope: its inputs hold nothing of a
 * tenant's, so one tenant's answer may be served to another.
 *
 * @internal
 */
export const globalCacheDataClass = "public"

/**
 * What a policy or prompt version left out of a workflow defaults to. Evidence then cannot tell
 * revisions apart, so building a gateway logs a warning once per such workflow.
 *
 * @since 0.2.0
 * @category Constants
 */
export const unversioned = "unversioned"

/**
 * The output-token cap of a call when neither its command nor its workflow sets
 * `maxOutputTokens`: 4,096 tokens, or the target's `capabilities.maxOutputTokens` when that is
 * lower. A budget reserves for this many output tokens and the provider is asked for no more, so a
 * call costs more than it reserved only when the provider counts more tokens than estimated — and a
 * model's full output limit (32,768 tokens and more) is never reserved by default.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultMaxOutputTokens = 4_096

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
   * checked before anything is counted or sent. Default 1,048,576 characters.
   */
  maxInputCharacters: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /**
   * Output-token cap of one call (a command's `maxOutputTokens` may lower it). Omitted: the
   * command's, else {@link defaultMaxOutputTokens} (4,096); never above the target's own limit. The
   * cap is what the reservation pays for and what the provider is asked for.
   */
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
  canary: Schema.optional(CanaryPolicy),
  /** Escalation to a stronger target (see {@link EscalationPolicy}); omitted: only the command's `escalate`. */
  escalation: Schema.optional(EscalationPolicy),
  /**
   * Makes this an embedding workflow (`ModelGateway.embed` only, never `generate`/`stream`): the
   * vector space every answer must be in.
   */
  embedding: Schema.optional(EmbeddingSpace),
  /** What a reload giving a route target a new model version does. Omitted: `switch`. */
  onNewVersion: Schema.optional(OnNewVersion),
  /** The canary a new version starts as under `onNewVersion: "canary"`. */
  newVersionCanary: Schema.optional(NewVersionCanary),
  /** A candidate target sent a sampled share of calls off the caller's path. */
  shadow: Schema.optional(ShadowPolicy),
  /** Demotion of targets whose quality regresses on this workflow. */
  quality: Schema.optional(QualityPolicy),
  /**
   * The tenants this workflow serves (at most 1,000): only calls the host vouched for one of them
   * (`Tenancy.vouch`); every other call is refused (`PolicyViolation` `TENANT_NOT_ALLOWED`). Each
   * must be servable by a route target (checked at startup). Absent: every tenant.
   */
  tenants: Schema.optional(Schema.Array(TenantId).pipe(Schema.minItems(1), Schema.maxItems(1_000))),
  /** The response cache (`docs/caching.md`); omitted: no answer is cached. */
  cache: Schema.optional(CachePolicy),
  /** Prompt-prefix affinity (scored selection only); omitted: none. */
  prefixAffinity: Schema.optional(PrefixAffinity)
}) {}
