/**
 * The transport seam of the adapters: what one HTTP exchange needs of the wire (send, status and
 * headers, a bounded body, an error body for classification, a body stream for SSE), and its
 * implementation over any `@effect/platform` `HttpClient`. The direct `undici` implementation is in
 * `undici.ts`; both give the same answers and the same classified errors.
 *
 * @internal
 */
import type { Headers, HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Scope } from "effect"
import { Effect, Stream } from "effect"
import type { Meta } from "./classify.js"
import { readBody, readErrorBody, send, transportError, withRedactedSecrets } from "./http.js"

/** What a JSON exchange reads of its answer. @internal */
export interface ExchangeOptions {
  /** Provider id used in error details. */
  readonly provider: string
  /** Largest 2xx body accepted, in bytes (a larger one is `invalid_output`). */
  readonly maxBytes: number
  /** The provider's request id in the answer's headers (for the errors of a 2xx body). */
  readonly requestId: (headers: Headers.Headers) => string | undefined
}

/**
 * A whole answer: for a 2xx status, all of its body (within `maxBytes`); for another, at most
 * `errorBodyLimit` bytes of it, `undefined` when it could not be read.
 *
 * @internal
 */
export interface Answer {
  readonly status: number
  readonly headers: Headers.Headers
  readonly body: string | undefined
}

/** An answer whose head arrived; its body is read once, by one of the three readers. @internal */
export interface Opened {
  readonly status: number
  readonly headers: Headers.Headers
  /** The whole body, within `maxBytes` (a larger one is `invalid_output`, the rest not read). */
  readonly readBody: (maxBytes: number, meta: Meta) => Effect.Effect<string, ProviderError>
  /** At most `errorBodyLimit` bytes of the body; `undefined` when it cannot be read. */
  readonly readErrorBody: Effect.Effect<string | undefined>
  /** The body as it arrives; a connection lost mid-body is `transport`, `processed: "maybe"`. */
  readonly stream: (meta: Meta) => Stream.Stream<Uint8Array, ProviderError>
}

/**
 * How the adapters reach a provider. Neither implementation retries, follows the caller's trace
 * into the vendor (`traceparent`) or puts a header value in a span (each redacts them itself: the
 * callers do not).
 *
 * @internal
 */
export interface Transport {
  /** One request and its whole answer. Interrupting it aborts the request. */
  readonly exchange: (
    request: HttpClientRequest.HttpClientRequest,
    options: ExchangeOptions
  ) => Effect.Effect<Answer, ProviderError>
  /**
   * `exchange` that owns its deadline (`ownedDeadline.ts`): `undefined` when the epoch-ms instant
   * `until` (`Date.now`) came first, the request then aborted; a completion at `until` wins.
   * Omitted when the transport cannot abort on its own timer (the engine then bounds the call).
   */
  readonly exchangeUntil?:
    | ((
        request: HttpClientRequest.HttpClientRequest,
        options: ExchangeOptions,
        until: number
      ) => Effect.Effect<Answer | undefined, ProviderError>)
    | undefined
  /** One request, up to its head; the body is released when the scope closes. */
  readonly open: (
    request: HttpClientRequest.HttpClientRequest,
    provider: string
  ) => Effect.Effect<Opened, ProviderError, Scope.Scope>
}

const isSuccess = (status: number) => status >= 200 && status < 300

const opened = (response: HttpClientResponse.HttpClientResponse, provider: string): Opened => ({
  status: response.status,
  headers: response.headers,
  readBody: (maxBytes, meta) => readBody(response, provider, maxBytes, meta),
  readErrorBody: readErrorBody(response),
  stream: (meta) => Stream.mapError(response.stream, (error) => transportError(provider, error, meta))
})

/**
 * The transport over an `@effect/platform` `HttpClient` (the one given: a proxy, its own tracing).
 * Its HTTP client span is the platform's.
 *
 * @internal
 */
export const fromHttpClient = (http: HttpClient.HttpClient): Transport => ({
  exchange: (request, options) =>
    Effect.flatMap(withRedactedSecrets(send(http, options.provider, request)), (response) =>
      isSuccess(response.status)
        ? Effect.map(
            readBody(response, options.provider, options.maxBytes, {
              httpStatus: response.status,
              // Read only when the body fails (the answer's own meta reads it once otherwise).
              get requestId() {
                return options.requestId(response.headers)
              }
            }),
            (body): Answer => ({ status: response.status, headers: response.headers, body })
          )
        : Effect.map(
            readErrorBody(response),
            (body): Answer => ({ status: response.status, headers: response.headers, body })
          )
    ),
  open: (request, provider) =>
    Effect.map(withRedactedSecrets(send(http, provider, request)), (response) => opened(response, provider))
})
