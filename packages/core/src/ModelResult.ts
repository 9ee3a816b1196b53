/**
 * The provider-neutral envelope a call returns, and the evidence it carries. The same evidence
 * becomes the {@link CallRecord} of every call, success or failure; neither holds prompt or
 * generated content outside `ModelResult.content`.
 *
 * Evidence, attempt records, costs, content and call records are plain immutable values described
 * by schemas (`Schema.encode(CallRecord)` for storage and export): the gateway builds them on every
 * call, so they are not classes.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ToolCall } from "./ModelCommand.js"
import { OptionsEvidence } from "./internal/optionSchemas.js"
import { TargetRef } from "./ModelTarget.js"
import { ExcludedTarget } from "./RouteDecision.js"
import * as RouteSchemas from "./internal/routeSchemas.js"
import { Identity } from "./Tenancy.js"
import * as Literals from "./internal/literals.js"
import type * as Steps from "./internal/completedStep.js"

/**
 * @since 0.1.0
 * @category Models
 */
export type CallId = typeof Literals.CallId.Type

const Count = Schema.Int.pipe(Schema.nonNegative())

/**
 * Token usage.
 *
 * @since 0.1.0
 * @category Models
 */
export class Usage extends Schema.Class<Usage>("@modelgate/core/Usage")({
  inputTokens: Count,
  cachedInputTokens: Schema.optionalWith(Count, { default: () => 0 }),
  outputTokens: Count,
  reasoningTokens: Schema.optionalWith(Count, { default: () => 0 }),
  /**
   * Audio input tokens, a subset of `inputTokens` priced at `Pricing.audioInputPerMillion` (OpenAI
   * `prompt_tokens_details.audio_tokens`, Gemini `promptTokensDetails` of modality `AUDIO`).
   * Absent when the provider reported none.
   */
  audioInputTokens: Schema.optional(Count)
}) {
  /** No usage. */
  static readonly zero: Usage = new Usage({ inputTokens: 0, outputTokens: 0 })
  /** Sum of two usages. */
  add(that: Usage): Usage {
    const audio =
      this.audioInputTokens === undefined && that.audioInputTokens === undefined
        ? undefined
        : (this.audioInputTokens ?? 0) + (that.audioInputTokens ?? 0)
    return new Usage({
      inputTokens: this.inputTokens + that.inputTokens,
      cachedInputTokens: this.cachedInputTokens + that.cachedInputTokens,
      outputTokens: this.outputTokens + that.outputTokens,
      reasoningTokens: this.reasoningTokens + that.reasoningTokens,
      ...(audio === undefined ? {} : { audioInputTokens: audio })
    })
  }
}

/**
 * Cost in currency units: the estimate before the call, what was reserved, what was committed.
 *
 * @since 0.1.0
 * @category Models
 */
const Cost = Schema.Struct({
  currency: Schema.Literal("USD"),
  /** Worst case of the first target; absent when no limit needed a token count. */
  estimated: Schema.optional(Schema.Number),
  reserved: Schema.Number,
  actual: Schema.Number,
  /**
   * Of `actual`, the spend that did not fit under the tenant's limit when it was committed (more
   * than was reserved, or after the reservation expired, with no room left): committed all the
   * same, and reported as overspent. Absent when zero.
   */
  overspent: Schema.optional(Schema.Number),
  /**
   * The part of `actual` paid for audio input tokens (`Usage.audioInputTokens` at the target's
   * `audioInputPerMillion`, else its input price). Absent when no attempt reported audio tokens.
   */
  audioInput: Schema.optional(Schema.Number)
}).annotations({ identifier: "@modelgate/core/Cost" })
/** @since 0.1.0 */
export interface Cost extends Schema.Schema.Type<typeof Cost> {}

/**
 * How one attempt ended.
 *
 * @since 0.1.0
 * @category Models
 */
const AttemptOutcome = Schema.Literal(
  "success",
  "refusal",
  "rate_limited",
  "unavailable",
  "timeout",
  "invalid_output",
  "invalid_request",
  "rejected",
  "cancelled",
  "incomplete"
)
/** @since 0.1.0 */
export type AttemptOutcome = typeof AttemptOutcome.Type

/**
 * One attempt on one target.
 *
 * @since 0.1.0
 * @category Models
 */
export const AttemptRecord = Schema.Struct({
  target: TargetRef,
  /** 1 for the first attempt on this target. */
  attempt: Schema.Int,
  outcome: AttemptOutcome,
  /** Tag of the error this attempt ended with, if any. */
  errorTag: Schema.optional(Schema.String),
  httpStatus: Schema.optional(Schema.Int),
  providerRequestId: Schema.optional(Schema.String),
  /** Milliseconds from the start of the call. */
  startOffsetMs: Schema.Number,
  latencyMs: Schema.Number,
  /** The timeout this attempt ran under. */
  timeoutMs: Schema.Number,
  ttftMs: Schema.optional(Schema.Number),
  retryAfterMs: Schema.optional(Schema.Number),
  /** Whether a failed attempt may have been processed by the provider. */
  possiblyProcessed: Schema.optional(Schema.Boolean),
  maxOutputTokens: Schema.optional(Schema.Int),
  usage: Schema.optional(Usage),
  cost: Schema.optional(Schema.Number),
  modelVersion: Schema.optional(Schema.String)
}).annotations({ identifier: "@modelgate/core/AttemptRecord" })
/** @since 0.1.0 */
export interface AttemptRecord extends Schema.Schema.Type<typeof AttemptRecord> {}

/**
 * Why the call ended as it did.
 *
 * @since 0.1.0
 * @category Models
 */
export type CallOutcome = typeof Literals.CallOutcome.Type

/**
 * A step of a run that completed (successfully or not): its call and how it ended, not the whole
 * record.
 *
 * @since 0.2.0
 * @category Models
 */
export interface CompletedStep extends Schema.Schema.Type<typeof Steps.CompletedStep> {}

/**
 * Why the model stopped: `stop`, `length`, `tool_calls`, `content_filter`, `refusal` or `other`.
 *
 * @since 0.1.0
 * @category Models
 */
export type FinishReason = typeof Literals.FinishReason.Type

/**
 * What an embedding call asked for (`ModelGateway.embed`): the vector space and how many inputs,
 * one vector each. Never the inputs or the vectors.
 *
 * @since 0.2.0
 * @category Models
 */
const EmbeddingEvidence = Schema.Struct({
  family: Schema.String,
  dimensions: Schema.Int,
  /** Inputs sent, one vector each. */
  inputs: Schema.Int
}).annotations({ identifier: "@modelgate/core/EmbeddingEvidence" })
/** @since 0.2.0 */
export interface EmbeddingEvidence extends Schema.Schema.Type<typeof EmbeddingEvidence> {}

/**
 * What the response cache did for a call (a workflow with `cache` only). `lookup`: `hit` (served
 * from the cache: no provider call, no spend), `miss`, `error` (the store failed or was too slow: a
 * normal call), `refresh` (the read was skipped) or `bypass` (neither read nor stored: the
 * command's `cache: "bypass"`, or side-effecting tools offered). `keyId` is 12 hex digits of the
 * key, never content.
 *
 * @since 0.2.0
 * @category Models
 */
const CacheEvidence = Schema.Struct({
  hit: Schema.Boolean,
  lookup: Schema.Literal("hit", "miss", "error", "refresh", "bypass"),
  keyId: Schema.optional(Schema.String),
  /** A hit: how long ago the answer was stored (ms). */
  ageMs: Schema.optional(Schema.Number),
  /** A hit: the id of the call whose answer it is. */
  callId: Schema.optional(Schema.String),
  /** A miss or refresh: whether the answer was stored. */
  stored: Schema.optional(Schema.Boolean),
  /** Encoded bytes served (a hit) or stored. */
  bytes: Schema.optional(Count)
}).annotations({ identifier: "@modelgate/core/CacheEvidence" })
/** @since 0.2.0 */
export interface CacheEvidence extends Schema.Schema.Type<typeof CacheEvidence> {}

/**
 * The evidence of one call: versions, route, attempts, timing, usage and cost. Never content.
 *
 * @since 0.1.0
 * @category Models
 */
export const Evidence = Schema.Struct({
  callId: Literals.CallId,
  workflow: Schema.String,
  policyVersion: Schema.String,
  promptId: Schema.String,
  promptVersion: Schema.String,
  schemaVersion: Schema.optional(Schema.String),
  pricingVersion: Schema.optional(Schema.String),
  /** The `Catalogue` version the target was resolved from, when it names a catalogue entry. */
  catalogueVersion: Schema.optional(Schema.String),
  /** The version of the gateway configuration the call ran on (set by `reload`, or a hash of it). */
  configVersion: Schema.optional(Schema.String),
  /** The target whose answer was used. */
  target: Schema.optional(TargetRef),
  model: Schema.optional(Schema.String),
  /** The model version the provider says it ran (model id, fingerprint). */
  modelVersion: Schema.optional(Schema.String),
  eligible: Schema.Array(TargetRef),
  excluded: Schema.Array(ExcludedTarget),
  /** The route decision's id (`RouteDecision.routeId`; absent without a route or before 0.6.0). */
  routeId: Schema.optional(Schema.String),
  /** Why the first eligible target led (absent in evidence recorded before 0.4.0 or without a route). */
  selectionReason: Schema.optional(Literals.SelectionReason),
  /**
   * Each escalation with its signal, in order: the command's `escalate` (at routing), then those
   * inside the call (invalid output, the workflow's check). Absent without any.
   */
  escalations: Schema.optional(Schema.Array(RouteSchemas.Escalation)),
  /** Scored selection: the scores of the targets that passed the hard filters, best first. */
  scores: Schema.optional(Schema.Array(RouteSchemas.TargetScore)),
  /** The workflow's canary and the side the call was assigned (absent without a canary). */
  canary: Schema.optional(RouteSchemas.CanaryAssignment),
  fallbackUsed: Schema.Boolean,
  degraded: Schema.Boolean,
  attempts: Schema.Array(AttemptRecord),
  retryCount: Schema.Int,
  /** Set when a retry was skipped because the process-wide retry budget was exhausted. */
  retryBudgetExhausted: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  startedAt: Schema.Number,
  totalLatencyMs: Schema.Number,
  usage: Usage,
  cost: Cost,
  schemaValid: Schema.optional(Schema.Boolean),
  /**
   * The sampling options of the answer (those sent to `target`; without an answer, those the call
   * resolved to): values, never content; the end-user id only as `"set"`, provider options by
   * field name. Absent when none were set.
   */
  options: Schema.optional(OptionsEvidence),
  /** The agent run the call belongs to (the command's `runId`, else the run it ran in). */
  runId: Schema.optional(Schema.String),
  /** The call's step in its agent run (the command's `step`, else the run's). */
  step: Schema.optional(Schema.Int),
  /** An embedding call: its vector space and input count (absent for other calls). */
  embedding: Schema.optional(EmbeddingEvidence),
  /** The tenant the host vouched for, who vouched and the subject (`Tenancy`); absent: nobody vouched. */
  identity: Schema.optional(Identity),
  /** What the response cache did (a workflow with `cache` only; absent otherwise). */
  cache: Schema.optional(CacheEvidence),
  /** The caller's request id (`ModelCommand.requestId`), for correlation. Since 0.3.0. */
  requestId: Schema.optional(Schema.String)
}).annotations({ identifier: "@modelgate/core/Evidence" })
/** @since 0.1.0 */
export interface Evidence extends Schema.Schema.Type<typeof Evidence> {}

/**
 * Provider-neutral content of a result.
 *
 * @since 0.1.0
 * @category Models
 */
const Content = Schema.Struct({
  text: Schema.optional(Schema.String),
  /** The validated structured value (workflows with an output schema). */
  value: Schema.optional(Schema.Unknown),
  toolCalls: Schema.Array(ToolCall)
}).annotations({ identifier: "@modelgate/core/Content" })
/** @since 0.1.0 */
export interface Content extends Schema.Schema.Type<typeof Content> {}

/**
 * The envelope a successful (or degraded) call returns.
 *
 * @since 0.1.0
 * @category Models
 */
export class ModelResult extends Schema.Class<ModelResult>("@modelgate/core/ModelResult")({
  content: Content,
  finishReason: Literals.FinishReason,
  evidence: Evidence
}) {}

/**
 * Exactly one per logical call, handed to the `CallRecorder`.
 *
 * @since 0.1.0
 * @category Models
 */
export const CallRecord = Schema.Struct({
  tenant: Schema.optional(Schema.String),
  mode: Schema.Literal("generate", "stream", "embed"),
  outcome: Literals.CallOutcome,
  errorTag: Schema.optional(Schema.String),
  errorReason: Schema.optional(Schema.String),
  finishReason: Schema.optional(Literals.FinishReason),
  evidence: Evidence,
  /**
   * `pending`: the budget store did not record the call's commit in time; it is retried in the
   * background until the reservation expires (`evidence.cost.actual` is what it commits). Absent
   * when the money was settled (or nothing was reserved).
   */
  settlement: Schema.optional(Schema.Literal("pending"))
}).annotations({ identifier: "@modelgate/core/CallRecord" })
/** @since 0.1.0 */
export interface CallRecord extends Schema.Schema.Type<typeof CallRecord> {}
