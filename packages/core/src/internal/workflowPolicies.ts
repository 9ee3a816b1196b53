/**
 * The sub-policies of a `Workflow` (capabilities, output, retry, scoring, escalation, canary, prefix
 * affinity, new-version canary, shadow, quality): decoded as fields of `Workflow.Workflow` and read
 * by the engine, never built by a user (a workflow is written as plain data).
 */
import { Duration, Schema } from "effect"
import { AudioFormat, MediaType, maxEmbeddingDimensions, TargetRef } from "../ModelTarget.js"
import { Millis, Name } from "./fieldSchemas.js"
import * as Literals from "./literals.js"

/**
 * How a workflow orders its eligible targets: `ordered` (route order, the default) or `scored`
 * (by `Router.score`, ties in route order).
 */
export const Selection = Schema.Literal("ordered", "scored")

/**
 * Capabilities every route of the workflow must have.
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
 */
export class OutputSpec extends Schema.Class<OutputSpec>("@modelgate/core/OutputSpec")({
  /** Looked up among the schemas' own names (`constructor` or `toString` find nothing inherited). */
  schema: Name,
  schemaVersion: Name
}) {}

/**
 * Retry settings. Delays follow exponential backoff with full jitter; a provider's retry-after is
 * the minimum wait.
 */
export class RetryPolicy extends Schema.Class<RetryPolicy>("@modelgate/core/RetryPolicy")({
  baseDelay: Schema.optionalWith(Millis, { default: () => Duration.millis(200) }),
  maxDelay: Schema.optionalWith(Millis, { default: () => Duration.seconds(5) }),
  factor: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThanOrEqualTo(1), Schema.lessThanOrEqualTo(10)), {
    default: () => 2
  })
}) {}

/** A weight or threshold between 0 and 1. */
export const Weight = Schema.Number.pipe(Schema.between(0, 1))

/**
 * Weights of the score's terms; each omitted one keeps its default (
 * quality 0.45, latency 0.20, cost 0.15, health 0.10, affinity 0.10).
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
 */
export class EscalationPolicy extends Schema.Class<EscalationPolicy>("@modelgate/core/EscalationPolicy")({
  /** Lowest quality class an escalation goes to (omitted: every class above the current target's). */
  tier: Schema.optional(Literals.QualityTier),
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
 */
const CanaryStickiness = Schema.Literal("session", "tenant", "call")

/**
 * How a canary's controller (`CanaryController`) moves its share: after each `window` in which the
 * candidate saw at least `minSamples` calls, it rolls the canary back (share 0) when the candidate is
 * worse than the baseline by more than a threshold, else ramps the share to the next of `steps`
 * (the last step completes the canary). A window with fewer candidate calls changes nothing.
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
 */
export const OnNewVersion = Schema.Literal("switch", "canary")

/**
 * The canary a new model version starts as under `onNewVersion: "canary"`.
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
