/**
 * A real loopback HTTP server (127.0.0.1, ephemeral port) that speaks the wire formats of
 * OpenAI Chat Completions, Anthropic Messages, Gemini generateContent / streamGenerateContent and
 * OpenAI-compatible local servers, with scripted behaviour per request: success (text, structured
 * JSON, tool calls, refusals, usage with cached and reasoning tokens), HTTP errors with each
 * provider's envelope and retry headers, latency, TTFT, inter-chunk delays, errors after HTTP 200,
 * truncated streams, dropped connections and invalid JSON. Every request is recorded.
 *
 * Routes (use {@link Service.baseUrl} as an adapter's `baseUrl`):
 * - OpenAI: `POST /v1/chat/completions`
 * - Anthropic: `POST /v1/messages`
 * - Gemini: `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`
 * - OpenAI-compatible: `POST /compat/v1/chat/completions`
 * - Embeddings: OpenAI `POST /v1/embeddings`; Gemini `POST /v1beta/models/{model}:embedContent` and
 *   `:batchEmbedContents` (a success answers one deterministic vector per input, of the requested
 *   `dimensions` / `outputDimensionality`, default 8)
 * - OpenAI Responses (provider `openai-responses`): `POST /v1/responses` (JSON, or `event:` SSE frames with `stream: true`)
 *
 * Delays are real time (it is a real server), whatever clock the caller runs under.
 *
 * @example
 * ```ts
 * import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
 *
 * Effect.gen(function* () {
 *   const mock = yield* MockProviderServer
 *   yield* mock.enqueue([MockProviderServer.failure(429, { headers: { "retry-after": "2" } })], { provider: "openai" })
 *   // … call the adapter with baseUrl = mock.baseUrl("openai")
 *   const [request] = yield* mock.requests
 * }).pipe(Effect.provide(MockProviderServer.layer()))
 * ```
 *
 * @since 0.1.0
 */
import type { HttpServerError } from "@effect/platform"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Clock, Context, Effect, Layer, Stream } from "effect"
import type { Scope } from "effect"
import * as Http from "node:http"
import type { Behavior, Drop, Failure, Provider, Raw, Success } from "./internal/mockScript.js"
import type * as Script from "./internal/mockScript.js"
import type { SseAnswer } from "./internal/mockWire.js"
import {
  anthropicBody,
  anthropicSse,
  errorBody,
  exampleFor,
  geminiBody,
  geminiSse,
  openAiBody,
  openAiSse,
  requestedSchema,
  streamErrorFrames
} from "./internal/mockWire.js"
import { responsesBody, responsesSse } from "./internal/responsesWire.js"
import { embeddingBody } from "./internal/mockEmbeddings.js"

export type {
  Provider,
  UsageSpec,
  ToolCallSpec,
  ErrorSpec,
  StreamEnd,
  Success,
  Failure,
  Drop,
  Raw,
  Behavior
} from "./internal/mockScript.js"

/**
 * @since 0.1.0
 * @category Constructors
 */
export const success = (options: Omit<Success, "_tag"> = {}): Behavior => ({ _tag: "Success", ...options })

/**
 * @since 0.1.0
 * @category Constructors
 */
export const failure = (status: number, options: Omit<Failure, "_tag" | "status"> = {}): Behavior => ({
  _tag: "Failure",
  status,
  ...options
})

/**
 * @since 0.1.0
 * @category Constructors
 */
export const drop = (options: Omit<Drop, "_tag"> = {}): Behavior => ({ _tag: "Drop", ...options })

/**
 * @since 0.1.0
 * @category Constructors
 */
export const raw = (
  status: number,
  body: string,
  options: Omit<Raw, "_tag" | "status" | "body" | "contentType"> & { readonly contentType?: string | undefined } = {}
): Behavior => ({ _tag: "Raw", status, body, ...options, contentType: options.contentType ?? "application/json" })

/**
 * A request as received.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RecordedRequest {
  readonly provider: Provider
  readonly method: string
  /** Path and query string. */
  readonly url: string
  /** Model from the body (OpenAI, Anthropic) or the path (Gemini). */
  readonly model: string | undefined
  readonly stream: boolean
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>
  readonly rawBody: string
  /** Parsed JSON body (`undefined` if it was not JSON). */
  readonly body: unknown
}

/**
 * Chooses a behaviour for a request; `undefined` falls through to the default.
 *
 * @since 0.1.0
 * @category Models
 */
export type Handler = (request: RecordedRequest) => Behavior | undefined

/**
 * Which requests a script applies to. Omitted fields match anything.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Match {
  readonly provider?: Provider | undefined
  readonly model?: string | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** `http://127.0.0.1:{port}`. */
  readonly url: string
  /** The `baseUrl` an adapter of `provider` takes. */
  readonly baseUrl: (provider: Provider) => string
  /**
   * Appends behaviours to the queue of `match`, consumed one per request. Lookup order: the
   * queue of (provider, model), (provider), (model), any; then the handler; then the default.
   */
  readonly enqueue: (behaviors: Behavior | ReadonlyArray<Behavior>, match?: Match) => Effect.Effect<void>
  /** Sets (or clears) the handler consulted when no queue has a behaviour. */
  readonly setHandler: (handler: Handler | undefined) => Effect.Effect<void>
  /** Requests received so far, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Clears queues, handler and recorded requests. */
  readonly reset: Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category Options
 */
export interface Options {
  /** Port to listen on. Default 0 (ephemeral). */
  readonly port?: number | undefined
  /** Record requests. Default `true`; turn off for benchmarks. */
  readonly record?: boolean | undefined
  /** Behaviour when nothing is scripted. Default {@link success}`()`. */
  readonly defaultBehavior?: Behavior | undefined
}

const encoder = new TextEncoder()

type Step =
  | { readonly _tag: "Write"; readonly text: string }
  | { readonly _tag: "Sleep"; readonly ms: number }
  | { readonly _tag: "Drop" }

const requestIdHeader: Record<Provider, string> = {
  openai: "x-request-id",
  "openai-compatible": "x-request-id",
  anthropic: "request-id",
  gemini: "x-request-id",
  "openai-responses": "x-request-id"
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const parseBody = (raw: string): unknown => {
  try {
    return JSON.parse(raw)
  } catch {
    return undefined
  }
}

/** Steps of a streamed success: preamble, paced content, then the ending the script chose. */
const streamSteps = (provider: Provider, success: Success, answer: SseAnswer): Array<Step> => {
  const steps: Array<Step> = answer.preamble.map((text) => ({ _tag: "Write", text }))
  const end = success.streamEnd ?? { _tag: "Complete" }
  const limit = end._tag === "Complete" ? answer.chunks.length : Math.min(end.afterChunks, answer.chunks.length)
  if (success.ttftMs !== undefined && success.ttftMs > 0) steps.push({ _tag: "Sleep", ms: success.ttftMs })
  for (let i = 0; i < limit; i++) {
    if (i > 0 && success.chunkDelayMs !== undefined && success.chunkDelayMs > 0) {
      steps.push({ _tag: "Sleep", ms: success.chunkDelayMs })
    }
    steps.push({ _tag: "Write", text: answer.chunks[i] ?? "" })
  }
  switch (end._tag) {
    case "Complete":
      if (limit > 0 && success.chunkDelayMs !== undefined && success.chunkDelayMs > 0) {
        steps.push({ _tag: "Sleep", ms: success.chunkDelayMs })
      }
      for (const text of answer.tail) steps.push({ _tag: "Write", text })
      break
    case "Truncate":
      break
    case "Drop":
      steps.push({ _tag: "Drop" })
      break
    case "InvalidJson":
      steps.push({
        _tag: "Write",
        text:
          provider === "anthropic"
            ? 'event: content_block_delta\ndata: {"type": "content_\n\n'
            : provider === "openai-responses"
              ? 'event: response.output_text.delta\ndata: {"type": "response.\n\n'
              : 'data: {"choices": [{"delta": \n\n'
      })
      break
    case "Error":
      // A short pause so that the error arrives as its own network chunk (Gemini's SDK needs it).
      steps.push({ _tag: "Sleep", ms: 5 })
      for (const text of streamErrorFrames(provider, end.error, end.code ?? 500)) steps.push({ _tag: "Write", text })
      break
  }
  return steps
}

/**
 * Starts a server in the current scope; it stops when the scope closes.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function* () {
    // long: the mock server as a closure: its routes and recorded requests shared by the handlers it serves
    const record = options.record ?? true
    const fallback = options.defaultBehavior ?? success()
    let recorded: Array<RecordedRequest> = []
    const queues = new Map<string, Array<Behavior>>()
    let handler: Handler | undefined
    let counter = 0

    const take = (key: string): Behavior | undefined => {
      const queue = queues.get(key)
      const next = queue?.shift()
      if (queue !== undefined && queue.length === 0) queues.delete(key)
      return next
    }
    const choose = (request: RecordedRequest): Behavior =>
      (queues.size > 0
        ? (take(`${request.provider}|${request.model ?? ""}`) ??
          take(`${request.provider}|*`) ??
          take(`*|${request.model ?? ""}`) ??
          take("*|*"))
        : undefined) ??
      handler?.(request) ??
      fallback

    const respond = (
      provider: Provider,
      model: string | undefined,
      stream: boolean
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const rawBody = yield* Effect.orElseSucceed(request.text, () => "")
        const body = parseBody(rawBody)
        const bodyModel = typeof field(body, "model") === "string" ? String(field(body, "model")) : undefined
        const recordedRequest: RecordedRequest = {
          provider,
          method: request.method,
          url: request.url,
          model: model ?? bodyModel,
          stream: stream || field(body, "stream") === true,
          headers: { ...request.headers },
          rawBody,
          body
        }
        if (record) recorded.push(recordedRequest)
        const chosen = choose(recordedRequest)
        // A plain default success answers a structured-output request with a value of its schema.
        const schema =
          chosen._tag === "Success" &&
          chosen.text === undefined &&
          chosen.json === undefined &&
          chosen.toolCalls === undefined
            ? requestedSchema(body)
            : undefined
        const behavior: Behavior =
          schema === undefined || chosen._tag !== "Success" ? chosen : { ...chosen, json: exampleFor(schema) }
        const n = ++counter
        // Gemini documents no request-id header; local OpenAI-compatible servers send none either.
        const requestId =
          behavior.requestId ??
          (provider === "gemini" || provider === "openai-compatible" ? undefined : `req_mock_${n}`)
        const headers: Record<string, string> = {
          ...(requestId === undefined ? {} : { [requestIdHeader[provider]]: requestId }),
          ...behavior.headers
        }
        if (behavior.latencyMs !== undefined && behavior.latencyMs > 0) yield* Effect.sleep(behavior.latencyMs)

        switch (behavior._tag) {
          case "Drop": {
            NodeHttpServerRequest.toServerResponse(request).socket?.destroy()
            return yield* Effect.never
          }
          case "Raw":
            return HttpServerResponse.text(behavior.body, {
              status: behavior.status,
              headers,
              contentType: behavior.contentType
            })
          case "Failure":
            return HttpServerResponse.text(
              behavior.body ?? errorBody(provider, behavior.status, behavior.error ?? {}, requestId ?? `req_mock_${n}`),
              { status: behavior.status, headers, contentType: behavior.contentType ?? "application/json" }
            )
          case "Success": {
            // Embeddings endpoints (OpenAI `/v1/embeddings`, Gemini `:embedContent` / `:batchEmbedContents`).
            const embedded = behavior.invalidJson ? undefined : embeddingBody(provider, recordedRequest, behavior)
            if (embedded !== undefined) {
              return HttpServerResponse.text(embedded, { headers, contentType: "application/json" })
            }
            const requested = recordedRequest.model
            const id =
              provider === "anthropic"
                ? `msg_mock_${n}`
                : provider === "gemini"
                  ? (behavior.requestId ?? `resp-mock-${n}`)
                  : provider === "openai-responses"
                    ? `resp_mock_${n}`
                    : `chatcmpl-mock-${n}`
            if (!recordedRequest.stream) {
              const text = behavior.invalidJson
                ? '{"id": "broken", "choices": ['
                : provider === "anthropic"
                  ? anthropicBody(behavior, requested, id)
                  : provider === "gemini"
                    ? geminiBody(behavior, requested, id)
                    : provider === "openai-responses"
                      ? responsesBody(behavior, requested, id)
                      : openAiBody(provider, behavior, requested, id)
              return HttpServerResponse.text(text, { headers, contentType: "application/json" })
            }
            const includeUsage = field(field(body, "stream_options"), "include_usage") === true
            const answer =
              provider === "anthropic"
                ? anthropicSse(behavior, requested, id)
                : provider === "gemini"
                  ? geminiSse(behavior, requested, id)
                  : provider === "openai-responses"
                    ? responsesSse(behavior, requested, id)
                    : openAiSse(provider, behavior, requested, id, includeUsage)
            const steps = streamSteps(provider, behavior, answer)
            const sseHeaders = { ...headers, "cache-control": "no-cache" }
            // Fast path: nothing to pace, nothing to break: one write.
            if (steps.every((step) => step._tag === "Write")) {
              return HttpServerResponse.text(steps.map((step) => (step._tag === "Write" ? step.text : "")).join(""), {
                headers: sseHeaders,
                contentType: "text/event-stream"
              })
            }
            const nodeResponse = NodeHttpServerRequest.toServerResponse(request)
            const body$ = Stream.fromIterable(steps).pipe(
              Stream.mapEffect((step) => {
                switch (step._tag) {
                  case "Write":
                    return Effect.succeed(encoder.encode(step.text))
                  case "Sleep":
                    return Effect.as(Effect.sleep(step.ms), new Uint8Array(0))
                  case "Drop":
                    // Close once the written chunks are flushed, without the final empty chunk.
                    return Effect.zipRight(
                      Effect.sync(() => nodeResponse.socket?.destroySoon()),
                      Effect.never
                    )
                }
              }),
              Stream.filter((chunk) => chunk.length > 0)
            )
            return HttpServerResponse.stream(body$, { headers: sseHeaders, contentType: "text/event-stream" })
          }
        }
      })

    const gemini = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = request.url.split("?")[0] ?? ""
      const match = /\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/.exec(
        path
      )
      if (match === null)
        return HttpServerResponse.text(errorBody("gemini", 404, { message: "unknown method" }, ""), {
          status: 404,
          contentType: "application/json"
        })
      return yield* respond("gemini", decodeURIComponent(match[1] ?? ""), match[2] === "streamGenerateContent")
    })

    const router = HttpRouter.empty.pipe(
      HttpRouter.post("/v1/chat/completions", respond("openai", undefined, false)),
      HttpRouter.post("/v1/embeddings", respond("openai", undefined, false)),
      HttpRouter.post("/v1/messages", respond("anthropic", undefined, false)),
      HttpRouter.post("/v1beta/models/*", gemini),
      HttpRouter.post("/compat/v1/chat/completions", respond("openai-compatible", undefined, false)),
      HttpRouter.post("/v1/responses", respond("openai-responses", undefined, false))
    )

    const server = yield* NodeHttpServer.make(() => Http.createServer(), { port: options.port ?? 0, host: "127.0.0.1" })
    // The server keeps real time even when the caller runs under a TestClock.
    yield* Effect.withClock(server.serve(router), Clock.make())
    const address = server.address
    const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://127.0.0.1"

    return {
      url,
      baseUrl: (provider) =>
        provider === "gemini" ? `${url}/v1beta` : provider === "openai-compatible" ? `${url}/compat/v1` : `${url}/v1`,
      enqueue: (behaviors, match = {}) =>
        Effect.sync(() => {
          const key = `${match.provider ?? "*"}|${match.model ?? "*"}`
          const list = Array.isArray(behaviors) ? behaviors : [behaviors]
          const queue = queues.get(key)
          if (queue === undefined) queues.set(key, [...list])
          else queue.push(...list)
        }),
      setHandler: (next) =>
        Effect.sync(() => {
          handler = next
        }),
      requests: Effect.sync(() => [...recorded]),
      reset: Effect.sync(() => {
        recorded = []
        queues.clear()
        handler = undefined
      })
    } satisfies Service
  })

function field(value: unknown, key: string): unknown {
  return isRecord(value) ? value[key] : undefined
}

/**
 * The mock server as a service.
 *
 * @since 0.1.0
 * @category Context
 */
export class MockProviderServer extends Context.Tag("@modelgate/testing/MockProviderServer")<
  MockProviderServer,
  Service
>() {
  /** @since 0.1.0 */
  static readonly make = make
  /** @since 0.1.0 */
  static readonly layer = (options: Options = {}): Layer.Layer<MockProviderServer, HttpServerError.ServeError> =>
    Layer.scoped(MockProviderServer, make(options))
  /** @since 0.1.0 */
  static readonly success = success
  /** @since 0.1.0 */
  static readonly failure = failure
  /** @since 0.1.0 */
  static readonly drop = drop
  /** @since 0.1.0 */
  static readonly raw = raw
}

type ServiceShape = Service
type OptionsShape = Options
type RecordedRequestShape = RecordedRequest
type HandlerShape = Handler
type MatchShape = Match

/**
 * The types of the module under the class, so that `import { MockProviderServer }` from the
 * package root and from `@modelgate/testing/MockProviderServer` is one and the same thing: the tag
 * (`yield* MockProviderServer`), its constructors (`MockProviderServer.layer()`,
 * `MockProviderServer.success(…)`) and its types (`MockProviderServer.Behavior`).
 *
 * @since 0.2.0
 * @category Models
 */
export declare namespace MockProviderServer {
  /** @since 0.2.0 */
  export type Service = ServiceShape
  /** @since 0.2.0 */
  export type Options = OptionsShape
  /** @since 0.2.0 */
  export type RecordedRequest = RecordedRequestShape
  /** @since 0.2.0 */
  export type Handler = HandlerShape
  /** @since 0.2.0 */
  export type Match = MatchShape
  /** @since 0.2.0 */
  export type Provider = Script.Provider
  /** @since 0.2.0 */
  export type Behavior = Script.Behavior
  /** @since 0.2.0 */
  export type Success = Script.Success
  /** @since 0.2.0 */
  export type Failure = Script.Failure
  /** @since 0.2.0 */
  export type Drop = Script.Drop
  /** @since 0.2.0 */
  export type Raw = Script.Raw
  /** @since 0.2.0 */
  export type UsageSpec = Script.UsageSpec
  /** @since 0.2.0 */
  export type ToolCallSpec = Script.ToolCallSpec
  /** @since 0.2.0 */
  export type ErrorSpec = Script.ErrorSpec
  /** @since 0.2.0 */
  export type StreamEnd = Script.StreamEnd
}

/**
 * Provides {@link MockProviderServer}, started for the lifetime of the layer.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options = {}): Layer.Layer<MockProviderServer, HttpServerError.ServeError> =>
  MockProviderServer.layer(options)
