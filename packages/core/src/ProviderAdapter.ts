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
import type { Duration, Scope, Stream } from "effect"
import { Context, Effect, Layer } from "effect"
import type { ProviderError } from "./Errors.js"
import type { Message, ToolCall, ToolChoice, ToolDefinition } from "./ModelCommand.js"
import type { FinishReason, Usage } from "./ModelResult.js"
import type { ModelTarget } from "./ModelTarget.js"

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
}

/**
 * Rate-limit headroom a provider reported with an answer (`x-ratelimit-*`,
 * `anthropic-ratelimit-*` headers). Fed to route health.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RateLimitHeadroom {
  readonly remainingRequests?: number | undefined
  readonly limitRequests?: number | undefined
  readonly remainingTokens?: number | undefined
  readonly limitTokens?: number | undefined
  /** Milliseconds until the limits reset. */
  readonly resetAfterMs?: number | undefined
}

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
 * One provider's implementation.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ProviderAdapter {
  readonly provider: string
  readonly generate: (request: ProviderRequest) => Effect.Effect<ProviderResponse, ProviderError>
  /** Must end with exactly one `Finish` event, or fail with a `ProviderError`. */
  readonly stream: (request: ProviderRequest) => Stream.Stream<ProviderStreamEvent, ProviderError>
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
