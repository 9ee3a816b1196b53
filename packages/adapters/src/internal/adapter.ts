/**
 * Wires a provider {@link Codec} (request building, response decoding, error classification, a
 * stream machine) into the `generate` / `stream` pair of a `ProviderAdapter`.
 *
 * @internal
 */
import type { Headers, HttpClientRequest } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { ProviderOptionsAllowlist } from "@modelgate/core/ModelOptions"
import type {
  ProviderAdapter,
  ProviderRequest,
  ProviderResponse,
  ProviderStreamEvent,
  RateLimitHeadroom
} from "@modelgate/core/ProviderAdapter"
import { Clock, Effect, Either, type Option, Stream } from "effect"
import type { Meta } from "./classify.js"
import { invalidOutput } from "./classify.js"
import { AnswerSoFar, checkAnswer } from "./answerCheck.js"
import type { EchoRules } from "./echo.js"
import * as Echo from "./echo.js"
import { defaultMaxResponseBytes, parseJson, parseJsonOrUndefined } from "./http.js"
import type { StreamMachine } from "./sse.js"
import { rateLimitFromHeaders } from "./rateLimit.js"
import { decode, defaultMaxEventBytes } from "./sse.js"
import type { Answer, Transport } from "./transport.js"

/** @internal */
export interface Codec {
  /** Provider id used in error details. */
  readonly provider: string
  /** The wire fields `providerOptions` may set (`ProviderAdapter.providerOptions`). */
  readonly providerOptions: ProviderOptionsAllowlist
  /** The HTTP request (with its credentials) for a neutral request. */
  readonly build: (
    request: ProviderRequest,
    stream: boolean
  ) => Either.Either<HttpClientRequest.HttpClientRequest, ProviderError>
  readonly requestId: (headers: Headers.Headers) => string | undefined
  /** Decodes a 2xx JSON body (an error object in it is an error after 200). */
  readonly decodeResponse: (body: unknown, meta: Meta) => Either.Either<ProviderResponse, ProviderError>
  /** Classifies a non-2xx answer; `body` is the parsed JSON body, if any. */
  readonly classifyError: (input: {
    readonly status: number
    readonly headers: Headers.Headers
    readonly body: unknown
    readonly nowMs: number
    readonly requestId: string | undefined
  }) => ProviderError
  readonly streamMachine: (meta: Meta) => StreamMachine
  /** What the provider's echoes (model version, request ids) are checked against (`echo.ts`). */
  readonly echo: EchoRules
}

/**
 * The codec with its header request ids held to the echo check (`Meta`, `Started`, the errors of
 * non-2xx answers all read them from there).
 *
 * @internal
 */
export const echoChecked = <C extends Pick<Codec, "requestId">>(codec: C, rules: EchoRules): C => ({
  ...codec,
  requestId: (headers: Headers.Headers) => Echo.checkRequestId(rules, codec.requestId(headers))
})

const isSuccess = (status: number) => status >= 200 && status < 300

/** Events equivalent to a complete non-streamed answer (a server that ignored `stream: true`). @internal */
export const responseToEvents = (response: ProviderResponse): ReadonlyArray<ProviderStreamEvent> => [
  ...(response.text ? [{ _tag: "TextDelta" as const, text: response.text }] : []),
  ...response.toolCalls.map((call, index) => ({
    _tag: "ToolCallDelta" as const,
    index,
    id: call.id,
    name: call.name,
    argumentsDelta: call.arguments
  })),
  {
    _tag: "Finish" as const,
    finishReason: response.finishReason,
    refusal: response.refusal,
    usage: response.usage,
    modelVersion: response.modelVersion
  }
]

/** What every wire codec's settings hold: the provider id, its credentials and its echo rules. */
export interface CodecSettings {
  readonly provider: string
  /** Adds credentials and static headers. */
  readonly authorize: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
  /** What the provider's echoes are checked against (`echo.ts`). */
  readonly echo: EchoRules
}

/**
 * Size limits of an adapter's answers: the options every HTTP adapter's `Options` take.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Limits {
  /** Largest response body accepted (streams included). Default 8 MiB (embeddings: 64 MiB). */
  readonly maxResponseBytes?: number | undefined
  /**
   * Largest single server-sent event of a stream, in bytes; a larger one fails the attempt as
   * `invalid_output` as soon as its bytes arrive, before it is parsed. Default 1 MiB (also used
   * for a value below 1).
   */
  readonly maxEventBytes?: number | undefined
}

/** A limit option: a positive number (floored), else the default. @internal */
export const limitOr = (value: number | undefined, fallback: number): number =>
  value !== undefined && value >= 1 ? Math.floor(value) : fallback

/**
 * A non-2xx answer as the provider's `ProviderError` (the codec's classification of its status,
 * headers and error body), at the epoch-ms instant `nowMs`.
 *
 * @internal
 */
export const statusFailure = (
  codec: Pick<Codec, "classifyError" | "requestId">,
  response: { readonly status: number; readonly headers: Headers.Headers },
  text: string | undefined,
  nowMs: number
): ProviderError =>
  codec.classifyError({
    status: response.status,
    headers: response.headers,
    body: parseJsonOrUndefined(text),
    nowMs,
    requestId: codec.requestId(response.headers)
  })

/**
 * {@link statusFailure} at the `Clock`'s instant.
 *
 * @internal
 */
export const failStatus = (
  codec: Pick<Codec, "classifyError" | "requestId">,
  response: { readonly status: number; readonly headers: Headers.Headers },
  text: string | undefined
): Effect.Effect<never, ProviderError> =>
  Effect.clockWith((clock) => Effect.fail(statusFailure(codec, response, text, clock.unsafeCurrentTimeMillis())))

/**
 * One JSON request and its JSON answer (the transport keeps credentials and response header
 * values out of its spans): a non-2xx answer classified ({@link statusFailure}); the body read
 * within `maxBytes` and parsed (not JSON: `invalid_output`), decoded by `decode`; the answer's
 * rate-limit headers attached.
 *
 * @internal
 */
export const exchangeJson = <A extends { readonly rateLimit?: RateLimitHeadroom | undefined }>(
  http: Transport,
  codec: Pick<Codec, "provider" | "classifyError" | "requestId">,
  httpRequest: HttpClientRequest.HttpClientRequest,
  maxBytes: number,
  decodeBody: (json: unknown, meta: Meta) => Either.Either<A, ProviderError>
): Effect.Effect<A, ProviderError> =>
  Effect.flatMap(
    http.exchange(httpRequest, { provider: codec.provider, maxBytes, requestId: codec.requestId }),
    (answer) => answerOf(codec, answer, decodeBody)
  )

/**
 * A whole answer as its decoded value at the epoch-ms instant `nowMs`: a non-2xx answer classified
 * ({@link statusFailure}), the body parsed (not JSON: `invalid_output`) and decoded by `decode`,
 * the rate-limit headers attached.
 *
 * @internal
 */
export const settleAnswer = <A extends { readonly rateLimit?: RateLimitHeadroom | undefined }>(
  codec: Pick<Codec, "provider" | "classifyError" | "requestId">,
  answer: Answer,
  decodeBody: (json: unknown, meta: Meta) => Either.Either<A, ProviderError>,
  nowMs: number
): Either.Either<A, ProviderError> => {
  if (!isSuccess(answer.status)) return Either.left(statusFailure(codec, answer, answer.body, nowMs))
  const meta: Meta = { httpStatus: answer.status, requestId: codec.requestId(answer.headers) }
  const json = parseJson(answer.body ?? "")
  if (Either.isLeft(json)) return Either.left(invalidOutput(codec.provider, "response body is not JSON", meta))
  const decoded = decodeBody(json.right, meta)
  if (Either.isLeft(decoded)) return decoded
  const rateLimit = rateLimitFromHeaders(answer.headers, nowMs)
  return rateLimit === undefined ? decoded : Either.right({ ...decoded.right, rateLimit })
}

/**
 * {@link settleAnswer} at the `Clock`'s instant.
 *
 * @internal
 */
export const answerOf = <A extends { readonly rateLimit?: RateLimitHeadroom | undefined }>(
  codec: Pick<Codec, "provider" | "classifyError" | "requestId">,
  answer: Answer,
  decodeBody: (json: unknown, meta: Meta) => Either.Either<A, ProviderError>
): Effect.Effect<A, ProviderError> =>
  Effect.clockWith((clock) => settleAnswer(codec, answer, decodeBody, clock.unsafeCurrentTimeMillis()))

/**
 * Builds `generate` and `stream` for a codec.
 *
 * @internal
 */
export const makeAdapter = (http: Transport, raw: Codec, limits: Limits): Omit<ProviderAdapter, "provider"> => {
  const rules = raw.echo
  const codec = echoChecked(raw, rules)
  const provider = codec.provider
  const maxResponseBytes = limitOr(limits.maxResponseBytes, defaultMaxResponseBytes)
  const maxEventBytes = limitOr(limits.maxEventBytes, defaultMaxEventBytes)

  /** The events of a stream, its `Finish` held to {@link checkAnswer} over the answer so far. */
  const checked = (
    request: ProviderRequest,
    meta: Meta,
    events: Stream.Stream<ProviderStreamEvent, ProviderError>
  ): Stream.Stream<ProviderStreamEvent, ProviderError> =>
    Stream.suspend(() => {
      const soFar = new AnswerSoFar()
      return Stream.mapEffect(events, (event) => {
        soFar.add(event)
        if (event._tag === "Finish") {
          const answer = { text: soFar.text, toolCalls: [...soFar.calls.values()], finishReason: event.finishReason }
          const problem = checkAnswer(provider, request, answer, meta, event.usage)
          if (problem !== undefined) return Effect.fail(problem)
          const modelVersion = Echo.checkModelVersion(rules, request.target.model, event.modelVersion)
          if (modelVersion !== event.modelVersion) return Effect.succeed({ ...event, modelVersion })
        }
        return Effect.succeed(event)
      })
    })

  const decodeJson = (text: string, meta: Meta): Either.Either<ProviderResponse, ProviderError> => {
    const json = parseJson(text)
    if (Either.isLeft(json)) return Either.left(invalidOutput(provider, "response body is not JSON", meta))
    return codec.decodeResponse(json.right, meta)
  }

  const echoError = (error: ProviderError) => Echo.checkError(rules, error)

  const checkResponse = (
    request: ProviderRequest,
    response: ProviderResponse
  ): Either.Either<ProviderResponse, ProviderError> => {
    const problem = checkAnswer(provider, request, response, response, response.usage)
    return problem === undefined
      ? Either.right(Echo.checkAnswer(rules, request.target.model, response))
      : Either.left(problem)
  }

  const exchangeOptions = { provider, maxBytes: maxResponseBytes, requestId: codec.requestId }

  /** A whole answer to `request` as its checked response, at the `Clock`'s instant. */
  const settle = (request: ProviderRequest, answer: Answer): Effect.Effect<ProviderResponse, ProviderError> =>
    Effect.clockWith((clock) => {
      const response = settleAnswer(codec, answer, codec.decodeResponse, clock.unsafeCurrentTimeMillis())
      return Either.isLeft(response) ? response : checkResponse(request, response.right)
    })

  const generate = (request: ProviderRequest): Effect.Effect<ProviderResponse, ProviderError> => {
    const built = codec.build(request, false)
    if (Either.isLeft(built)) return Effect.fail(echoError(built.left))
    return Effect.mapError(
      Effect.flatMap(http.exchange(built.right, exchangeOptions), (answer) => settle(request, answer)),
      echoError
    )
  }

  // The attempt's deadline owned by the transport (one timer aborting the request), when it can.
  const exchangeUntil = http.exchangeUntil
  const generateUntil =
    exchangeUntil === undefined
      ? undefined
      : (request: ProviderRequest, until: number): Effect.Effect<Option.Option<ProviderResponse>, ProviderError> => {
          const built = codec.build(request, false)
          if (Either.isLeft(built)) return Effect.fail(echoError(built.left))
          return Effect.mapError(
            Effect.flatMap(exchangeUntil(built.right, exchangeOptions, until), (answer) =>
              answer === undefined ? Effect.succeedNone : Effect.asSome(settle(request, answer))
            ),
            echoError
          )
        }

  const stream = (request: ProviderRequest): Stream.Stream<ProviderStreamEvent, ProviderError> =>
    Stream.unwrapScoped(
      Effect.gen(function* () {
        const httpRequest = yield* codec.build(request, true)
        const response = yield* http.open(httpRequest, provider)
        if (!isSuccess(response.status)) {
          return yield* failStatus(codec, response, yield* response.readErrorBody)
        }
        const meta: Meta = { httpStatus: response.status, requestId: codec.requestId(response.headers) }
        const rateLimit = rateLimitFromHeaders(response.headers, yield* Clock.currentTimeMillis)
        const started: ProviderStreamEvent = {
          _tag: "Started",
          requestId: meta.requestId,
          httpStatus: response.status,
          ...(rateLimit === undefined ? {} : { rateLimit })
        }
        const contentType = response.headers["content-type"] ?? ""
        if (contentType.includes("application/json")) {
          // The server answered in one piece (it ignored `stream: true`, or sent an error object).
          const text = yield* response.readBody(maxResponseBytes, meta)
          const decoded = yield* decodeJson(text, meta)
          return Stream.concat(
            Stream.succeed(started),
            checked(request, meta, Stream.fromIterable(responseToEvents(decoded)))
          )
        }
        const events = decode(response.stream(meta), {
          provider,
          maxBytes: maxResponseBytes,
          maxEventBytes,
          meta,
          machine: codec.streamMachine(meta)
        })
        return Stream.concat(Stream.succeed(started), checked(request, meta, events))
      })
    ).pipe(Stream.mapError(echoError))

  return generateUntil === undefined
    ? { generate, stream, providerOptions: codec.providerOptions }
    : { generate, generateUntil, stream, providerOptions: codec.providerOptions }
}
