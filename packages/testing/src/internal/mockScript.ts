/**
 * The scripted behaviours of the mock provider server: plain data shared by the server and its
 * wire encoders (so neither imports the other). Re-exported by `MockProviderServer`.
 *
 * @since 0.2.0
 */
/**
 * The wire formats the server speaks (`openai-responses`: the OpenAI Responses API, `POST /v1/responses`).
 *
 * @since 0.1.0
 * @category Models
 */
export type Provider = "openai" | "anthropic" | "gemini" | "openai-compatible" | "openai-responses"

/**
 * Usage to report. `input` counts every input token (cached included), `output` every output
 * token (reasoning included); the server converts to each provider's own accounting.
 *
 * @since 0.1.0
 * @category Models
 */
export interface UsageSpec {
  readonly input: number
  readonly output: number
  readonly cached?: number | undefined
  readonly reasoning?: number | undefined
  /** Anthropic `cache_creation_input_tokens`. */
  readonly cacheCreation?: number | undefined
}

/**
 * A tool call the mock model makes. `arguments` is a value (serialized) or raw JSON text.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolCallSpec {
  readonly id?: string | undefined
  readonly name: string
  readonly arguments?: unknown
}

/**
 * An error, rendered into the provider's envelope. Missing fields get the provider's usual values
 * for the status (e.g. a 429 is `rate_limit_exceeded` / `rate_limit_error` / `RESOURCE_EXHAUSTED`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ErrorSpec {
  /** OpenAI / Anthropic / llama.cpp `error.type`. */
  readonly type?: string | undefined
  /** OpenAI `error.code` (vLLM and llama.cpp use the integer status; Gemini `error.code`). */
  readonly code?: string | number | null | undefined
  readonly message?: string | undefined
  /** Gemini `error.status` (`RESOURCE_EXHAUSTED`, …). */
  readonly status?: string | undefined
  /** Gemini `error.details[]`, or Anthropic `error.details` (`{ error_code }`). */
  readonly details?: unknown
  /** Extra fields merged into the error object (llama.cpp `n_ctx`, …). */
  readonly extra?: Record<string, unknown> | undefined
}

/**
 * How a streamed answer ends. `afterChunks` counts content chunks sent before the fault.
 *
 * @since 0.1.0
 * @category Models
 */
export type StreamEnd =
  | { readonly _tag: "Complete" }
  /** The body ends cleanly but without the finish / terminator frames. */
  | { readonly _tag: "Truncate"; readonly afterChunks: number }
  /** The connection is closed mid-body (no final chunk of the chunked encoding). */
  | { readonly _tag: "Drop"; readonly afterChunks: number }
  /** An error event after HTTP 200; `code` is the status inside it (Gemini, vLLM). */
  | {
      readonly _tag: "Error"
      readonly afterChunks: number
      readonly error: ErrorSpec
      readonly code?: number | undefined
    }
  /** A frame whose data is not JSON. */
  | { readonly _tag: "InvalidJson"; readonly afterChunks: number }

interface Common {
  /** Extra response headers (`retry-after`, `retry-after-ms`, `x-should-retry`, …). */
  readonly headers?: Record<string, string> | undefined
  /** Request id (header, and body where the provider puts one). */
  readonly requestId?: string | undefined
  /** Delay before the headers, in milliseconds. */
  readonly latencyMs?: number | undefined
}

/**
 * A 200 answer.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Success extends Common {
  readonly _tag: "Success"
  /** Text of the answer. Default: a short fixed sentence, or for a structured-output request a small value of the requested schema. `""` for none. */
  readonly text?: string | undefined
  /** A structured value; its JSON becomes the text. */
  readonly json?: unknown
  readonly toolCalls?: ReadonlyArray<ToolCallSpec> | undefined
  /** A model refusal: OpenAI `refusal`, Anthropic `stop_reason: "refusal"` (Gemini has none). */
  readonly refusal?: string | true | undefined
  /** Raw finish value in the provider's vocabulary (`length`, `max_tokens`, `SAFETY`, …). */
  readonly finishReason?: string | undefined
  /** Gemini: a blocked prompt (`promptFeedback.blockReason`, no candidates). */
  readonly blockReason?: string | undefined
  /** Usage to report; `null` for none. Default `{ input: 12, output: 7 }`. */
  readonly usage?: UsageSpec | null | undefined
  /** Model version to report. Default: the requested model. */
  readonly model?: string | undefined
  readonly systemFingerprint?: string | undefined
  /** Streams: delay between the headers (and preamble) and the first content chunk. */
  readonly ttftMs?: number | undefined
  /** Streams: delay between content chunks. */
  readonly chunkDelayMs?: number | undefined
  /** Streams: characters per text delta. Default 16. */
  readonly chunkSize?: number | undefined
  /** Streams: how the stream ends. Default complete. */
  readonly streamEnd?: StreamEnd | undefined
  /** Non-streamed: answer 200 with a body that is not JSON. */
  readonly invalidJson?: boolean | undefined
}

/**
 * A non-2xx answer with the provider's error envelope (or a raw `body`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Failure extends Common {
  readonly _tag: "Failure"
  readonly status: number
  readonly error?: ErrorSpec | undefined
  /** Raw body instead of the provider envelope (e.g. an HTML page from a proxy). */
  readonly body?: string | undefined
  readonly contentType?: string | undefined
}

/**
 * The connection is closed before any response.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Drop extends Common {
  readonly _tag: "Drop"
}

/**
 * Any status with a raw body, sent as is (a quirky server's exact bytes).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Raw extends Common {
  readonly _tag: "Raw"
  readonly status: number
  readonly body: string
  readonly contentType: string
}

/**
 * What the server does with one request.
 *
 * @since 0.1.0
 * @category Models
 */
export type Behavior = Success | Failure | Drop | Raw
