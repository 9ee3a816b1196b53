/**
 * The neutral contract between the engine and one provider: a request built from the command and
 * the target, a response or a stream of events, and classified failures ({@link ProviderError}).
 *
 * Adapters are registered per provider id: `ProviderAdapter.layer("openai", make)` provides the
 * adapter under the tag `ProviderAdapter.tag("openai")`. The gateway looks up the adapter of every
 * target's provider at startup and fails with a `GatewayConfigError` when one is missing.
 *
 * @since 0.1.0
 */
import type { Duration, Option, Scope, Stream } from "effect"
import { Context, Effect, Layer, Schema } from "effect"
import type { EmbeddingTask } from "./Embeddings.js"
import type { Message, ToolCall, ToolChoice, ToolDefinition } from "./ModelCommand.js"
import type { ProviderOptionsAllowlist, RequestOptions } from "./ModelOptions.js"
import { type FinishReason, Usage } from "./ModelResult.js"
import type { ModelTarget } from "./ModelTarget.js"
import { rejectedKinds, temporaryKinds } from "./internal/literals.js"

/**
 * A classified failure reported by a provider adapter. The engine maps it onto a `GatewayError`
 * (module `Errors`).
 *
 * - `processed`: `no` when the provider definitely did not process the request (a refusal to
 *   serve, 429/503 with an error body, connection refused), `maybe` otherwise (timeout after send,
 *   reset mid-body, error after streaming began).
 *
 * @since 0.1.0
 * @category Errors
 */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  kind: Schema.Literal(
    "refusal",
    "rate_limited",
    ...temporaryKinds,
    "invalid_request",
    "context_length",
    ...rejectedKinds,
    "rejected",
    "invalid_output"
  ),
  processed: Schema.Literal("no", "maybe"),
  httpStatus: Schema.optional(Schema.Int),
  retryAfter: Schema.optional(Schema.DurationFromMillis),
  requestId: Schema.optional(Schema.String),
  /** The provider's own error code or type (`insufficient_quota`, `overloaded_error`, …). */
  providerCode: Schema.optional(Schema.String),
  /** Usage the provider reported for the failed attempt, if any. */
  usage: Schema.optional(Usage),
  /** Short description made by the adapter; never request or response content. */
  detail: Schema.optionalWith(Schema.String, { default: () => "" })
}) {
  override get message(): string {
    return `provider error ${this.kind}${this.httpStatus ? ` (${this.httpStatus})` : ""}${this.detail ? `: ${this.detail}` : ""}`
  }
}

/**
 * Structured-output request: the JSON Schema derived from the workflow's Effect Schema.
 *
 * @since 0.1.0
 * @category Models
 */
export interface OutputFormat {
  /** A name for the schema (`ticket_classify`), as providers require one. */
  readonly name: string
  readonly jsonSchema: Record<string, unknown>
  /** Ask for the provider's strict / constrained mode. */
  readonly strict: boolean
}

/**
 * What the engine asks an adapter to send.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ProviderRequest {
  readonly target: ModelTarget
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolDefinition>
  readonly toolChoice: ToolChoice | undefined
  readonly output: OutputFormat | undefined
  /** Already reduced to what the command, the target and the reservation allow. */
  readonly maxOutputTokens: number
  /** The bound of this attempt (the engine enforces it; adapters may pass it on as a header). */
  readonly timeout: Duration.Duration
  /**
   * Neutral sampling options, already within the workflow's bounds and reduced to those the target
   * accepts (`capabilities.options`); each adapter maps them to its wire fields. Absent: none.
   */
  readonly options?: RequestOptions | undefined
  /**
   * Wire fields for this target's provider (`providerOptions[target.provider]`), already checked
   * against the adapter's {@link ProviderAdapter.providerOptions} allowlist. An adapter adds them
   * to its body and never lets one replace a field it set itself.
   */
  readonly providerOptions?: Readonly<Record<string, unknown>> | undefined
}

/**
 * Rate-limit headroom a provider reported with an answer (`x-ratelimit-*`,
 * `anthropic-ratelimit-*` headers). The one shape for it: adapters put it on a response (and on a
 * stream's `Started` event), the engine passes it to `Health.record`, and `Health` shows the last
 * one of each route in `RouteHealth.rateLimit` (a 429 without headers counts there as zero requests
 * left until its retry-after).
 *
 * Instants are epoch milliseconds of the `Clock`, read when the answer's headers arrived, so a reset
 * stays right however long the attempt then runs.
 *
 * Before 0.2.0 this carried `resetAfterMs` (relative) and `Health` had its own `RateLimitInfo` and
 * `RateLimitHeadroom`: now `resetAt = reportedAt + resetAfterMs`.
 *
 * @since 0.2.0
 * @category Models
 */
export const RateLimitHeadroom = Schema.Struct({
  remainingRequests: Schema.optional(Schema.Number),
  limitRequests: Schema.optional(Schema.Number),
  remainingTokens: Schema.optional(Schema.Number),
  limitTokens: Schema.optional(Schema.Number),
  /** Instant (epoch ms) the limits reset: the sooner of the request and token resets. */
  resetAt: Schema.optional(Schema.Number),
  /** Instant (epoch ms) it was reported. */
  reportedAt: Schema.Number
}).annotations({ identifier: "@modelgate/core/RateLimitHeadroom" })

/**
 * @since 0.1.0
 * @category Models
 */
export interface RateLimitHeadroom extends Schema.Schema.Type<typeof RateLimitHeadroom> {}

/**
 * A completed, non-streamed answer.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ProviderResponse {
  readonly text: string | undefined
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly finishReason: FinishReason
  /** The model declined (refusal field, `stop_reason: "refusal"`, blocked candidate). */
  readonly refusal: boolean
  readonly usage: Usage | undefined
  /** The model version the provider says it ran. */
  readonly modelVersion: string | undefined
  readonly requestId: string | undefined
  readonly httpStatus: number | undefined
  /** Rate-limit headroom, when the provider reports it. */
  readonly rateLimit?: RateLimitHeadroom | undefined
}

/**
 * Events of a streamed answer, in provider-neutral form.
 *
 * @since 0.1.0
 * @category Models
 */
export type ProviderStreamEvent =
  | {
      readonly _tag: "Started"
      readonly requestId: string | undefined
      readonly httpStatus: number
      readonly rateLimit?: RateLimitHeadroom | undefined
    }
  | { readonly _tag: "TextDelta"; readonly text: string }
  /**
   * Usage the provider reported before the end (cumulative for the attempt so far); optional, and
   * `Finish.usage` stays the final count.
   */
  | { readonly _tag: "Usage"; readonly usage: Usage }
  | {
      readonly _tag: "ToolCallDelta"
      readonly index: number
      readonly id: string | undefined
      readonly name: string | undefined
      readonly argumentsDelta: string
    }
  | {
      readonly _tag: "Finish"
      readonly finishReason: FinishReason
      readonly refusal: boolean
      readonly usage: Usage | undefined
      readonly modelVersion: string | undefined
    }

/**
 * What the engine asks an adapter to embed: every input in one provider request, one vector each,
 * in order.
 *
 * @since 0.2.0
 * @category Models
 */
export interface EmbedRequest {
  readonly target: ModelTarget
  readonly inputs: ReadonlyArray<string>
  /**
   * Vector length to ask for on the wire (OpenAI `dimensions`, Gemini `outputDimensionality`);
   * `undefined` when the target does not `sendDimensions`.
   */
  readonly dimensions: number | undefined
  /**
   * What the vectors are for (`Embeddings.EmbeddingTask`), for providers that tune them to it
   * (Gemini `taskType`); others ignore it. `undefined`: not said.
   */
  readonly task?: EmbeddingTask | undefined
  /** The bound of this attempt (the engine enforces it). */
  readonly timeout: Duration.Duration
}

/**
 * An embedding answer: one vector per input, in input order. The engine checks the count and
 * each vector's length against the target's `capabilities.embeddings`.
 *
 * @since 0.2.0
 * @category Models
 */
export interface EmbedResponse {
  readonly vectors: ReadonlyArray<ReadonlyArray<number>>
  /** Input tokens billed; `undefined` when the provider reports none (the engine bills its estimate). */
  readonly usage: Usage | undefined
  readonly modelVersion: string | undefined
  readonly requestId: string | undefined
  readonly httpStatus: number | undefined
  readonly rateLimit?: RateLimitHeadroom | undefined
}

/**
 * One provider's implementation.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ProviderAdapter {
  readonly provider: string
  /**
   * The wire fields `providerOptions` may set for this adapter, with the schema of each value.
   * Omitted: none. Fields the gateway owns or that could carry a URL, key or header are refused
   * whatever the allowlist says (`ModelOptions.ownedFields`).
   */
  readonly providerOptions?: ProviderOptionsAllowlist | undefined
  readonly generate: (request: ProviderRequest) => Effect.Effect<ProviderResponse, ProviderError>
  /**
   * `generate` that owns the attempt's deadline: `None` when the epoch-ms instant `until` (of the
   * live clock, `Date.now`) came first, the request then aborted; an answer completed at exactly
   * `until` wins. The engine uses it under the live clock instead of bounding `generate` itself (no
   * forked fiber per attempt). Omitted: the engine bounds `generate`. An adapter that wraps another's
   * `generate` must wrap or drop this too.
   *
   * @since 0.2.0
   */
  readonly generateUntil?:
    | ((request: ProviderRequest, until: number) => Effect.Effect<Option.Option<ProviderResponse>, ProviderError>)
    | undefined
  /** Must end with exactly one `Finish` event, or fail with a `ProviderError`. */
  readonly stream: (request: ProviderRequest) => Stream.Stream<ProviderStreamEvent, ProviderError>
  /**
   * Embeddings (`ModelGateway.embed`), with failures classified as for `generate`. Omitted: the
   * provider's targets cannot serve embedding workflows (a startup problem).
   */
  readonly embed?: ((request: EmbedRequest) => Effect.Effect<EmbedResponse, ProviderError>) | undefined
}

/**
 * The tag under which the adapter for `provider` is provided.
 *
 * @since 0.1.0
 * @category Context
 */
export const tag = (provider: string): Context.Tag<ProviderAdapter, ProviderAdapter> =>
  Context.GenericTag<ProviderAdapter>(`@modelgate/core/ProviderAdapter/${provider}`)

/**
 * Provides an adapter for `provider`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = <E, R>(
  provider: string,
  make: Effect.Effect<Omit<ProviderAdapter, "provider">, E, R>
): Layer.Layer<ProviderAdapter, E, Exclude<R, Scope.Scope>> =>
  Layer.scoped(
    tag(provider),
    Effect.map(make, (adapter) => ({ ...adapter, provider }))
  )

/**
 * Looks up the adapter for `provider` in the current context, if one was provided.
 *
 * @since 0.1.0
 * @category Context
 */
export const find = (provider: string) => Effect.serviceOption(tag(provider))
