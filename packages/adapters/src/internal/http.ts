/**
 * HTTP plumbing shared by the adapters: the client with secrets kept out of spans and no trace
 * propagation to vendors, transport-error classification, and bounded body reads.
 *
 * @internal
 */
import type { HttpClientError, HttpClientResponse } from "@effect/platform"
import { Headers, HttpClient } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import { Effect, Either, Stream } from "effect"
import type { Meta } from "./classify.js"
import { field, providerError } from "./classify.js"

/** Default bound of a response body: 8 MiB. @internal */
export const defaultMaxResponseBytes = 8 * 1024 * 1024

/** How much of an error body is read to classify it. @internal */
export const errorBodyLimit = 64 * 1024

/** Header names whose values never reach spans or logs. @internal */
export const secretHeaderNames: ReadonlyArray<string> = [
  "authorization",
  "x-api-key",
  "x-goog-api-key",
  "api-key",
  "proxy-authorization"
]

/**
 * Every header name. Response header values are the provider's (an echoing upstream can put prompt
 * text in `x-request-id` or any other header), so HTTP client spans carry header names only.
 */
const anyHeader = /^/

/**
 * Runs `effect` with every header value, request and response, redacted in the HTTP client's spans:
 * secrets (see {@link secretHeaderNames}) and the response headers, which the provider controls.
 * The adapters read the values they need themselves, bounded.
 *
 * @internal
 */
export const withRedactedSecrets = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locallyWith(effect, Headers.currentRedactedNames, withSecretNames)

/**
 * The redacted header names of an adapter's HTTP client span: `names` (the fiber's
 * `Headers.currentRedactedNames`) plus the secrets and every response header (see
 * {@link withRedactedSecrets}).
 *
 * @internal
 */
export const withSecretNames = (names: ReadonlyArray<string | RegExp>): ReadonlyArray<string | RegExp> => [
  ...names,
  ...secretHeaderNames,
  anyHeader
]

/**
 * The client adapters use: no `traceparent` sent to vendors. Retries are the engine's, never here.
 *
 * @internal
 */
export const client: Effect.Effect<HttpClient.HttpClient, never, HttpClient.HttpClient> = Effect.map(
  HttpClient.HttpClient,
  HttpClient.withTracerPropagation(false)
)

/** Error codes proving the connection never opened, so nothing was sent. @internal */
const notConnectedCodes: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_CONNECT",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "CERT_HAS_EXPIRED",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT"
])

/** Collects `code`s along the cause chain (and inside `AggregateError`s), bounded. @internal */
const errorCodes = (cause: unknown): Array<string> => {
  const codes: Array<string> = []
  const queue: Array<unknown> = [cause]
  for (let i = 0; i < queue.length && i < 16; i++) {
    const current = queue[i]
    const code = field(current, "code")
    // Runtime codes (`ECONNRESET`, `UND_ERR_SOCKET`); anything else is not one.
    if (typeof code === "string" && /^[A-Z0-9_]{1,64}$/.test(code)) codes.push(code)
    const inner = field(current, "cause")
    if (inner !== undefined) queue.push(inner)
    const errors = field(current, "errors")
    if (Array.isArray(errors)) queue.push(...errors)
  }
  return codes
}

/**
 * A request that failed before its answer's head (`cause` is the runtime's error). A connection
 * that never opened (refused, DNS, connect, TLS) is `processed: "no"`; one lost after the request
 * may have been sent is `"maybe"`.
 *
 * @internal
 */
export const requestFailure = (provider: string, cause: unknown): ProviderError => {
  const codes = errorCodes(cause)
  const code = codes.find((c) => notConnectedCodes.has(c)) ?? codes[0]
  const notConnected = code !== undefined && notConnectedCodes.has(code)
  return providerError({
    kind: "transport",
    processed: notConnected ? "no" : "maybe",
    providerCode: code,
    detail: `${provider}: ${notConnected ? "connection failed" : "connection lost before response"}${code ? ` (${code})` : ""}`
  })
}

/**
 * A body that failed mid-read (`cause` is the runtime's error): `transport`, `processed: "maybe"`.
 *
 * @internal
 */
export const bodyFailure = (
  provider: string,
  cause: unknown,
  httpStatus: number,
  meta?: Meta | undefined
): ProviderError => {
  const code = errorCodes(cause)[0]
  return providerError({
    kind: "transport",
    processed: "maybe",
    httpStatus: meta?.httpStatus ?? httpStatus,
    requestId: meta?.requestId,
    providerCode: code,
    detail: `${provider}: connection lost while reading the response${code ? ` (${code})` : ""}`
  })
}

/** The endpoint URL does not parse. @internal */
export const invalidUrl = (provider: string): ProviderError =>
  providerError({ kind: "rejected", processed: "no", detail: `${provider}: invalid endpoint URL` })

/** The request body cannot be encoded. @internal */
export const encodeFailure = (provider: string): ProviderError =>
  providerError({ kind: "invalid_request", processed: "no", detail: `${provider}: request encoding failed` })

/**
 * Classifies a failure of the HTTP client. Connection refused (and DNS / connect failures) is
 * `processed: "no"`; a failure after the request may have been sent, or mid-body, is `"maybe"`.
 *
 * @internal
 */
export const transportError = (
  provider: string,
  error: HttpClientError.HttpClientError,
  meta?: Meta | undefined
): ProviderError => {
  if (error._tag === "RequestError") {
    switch (error.reason) {
      case "InvalidUrl":
        return invalidUrl(provider)
      case "Encode":
        return encodeFailure(provider)
      case "Transport":
        return requestFailure(provider, error.cause)
    }
  }
  return bodyFailure(provider, error.cause, error.response.status, meta)
}

/**
 * Sends a request; failures of the client become classified {@link ProviderError}s.
 *
 * @internal
 */
export const send = (
  http: HttpClient.HttpClient,
  provider: string,
  request: Parameters<HttpClient.HttpClient["execute"]>[0]
): Effect.Effect<HttpClientResponse.HttpClientResponse, ProviderError> =>
  Effect.mapError(http.execute(request), (error) => transportError(provider, error))

/**
 * The bytes of `parts` (`size` in all) as one array; a single part is returned as is.
 *
 * @internal
 */
export const concatBytes = (parts: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  if (parts.length === 1 && parts[0] !== undefined) return parts[0]
  const out = new Uint8Array(size)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

const decoder = new TextDecoder()

/**
 * A body larger than `maxBytes`: the provider did answer, with more than we accept.
 *
 * @internal
 */
export const bodyTooLarge = (provider: string, maxBytes: number, meta: Meta): ProviderError =>
  providerError({
    kind: "invalid_output",
    processed: "maybe",
    httpStatus: meta.httpStatus,
    requestId: meta.requestId,
    detail: `${provider}: response body exceeds ${maxBytes} bytes`
  })

/**
 * Reads a body of at most `maxBytes`. A larger body fails with `invalid_output` (the provider did
 * answer, with more than we accept) and the rest of it is not read.
 *
 * @internal
 */
export const readBody = (
  response: HttpClientResponse.HttpClientResponse,
  provider: string,
  maxBytes: number,
  meta: Meta
): Effect.Effect<string, ProviderError> =>
  Effect.suspend(() => {
    // Built only when needed: an error captures a stack trace, which is not free on the hot path.
    const tooLarge = () => bodyTooLarge(provider, maxBytes, meta)
    const declared = Number(response.headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBytes) {
      // Reading one chunk and stopping closes the body, which aborts the request.
      return Effect.zipRight(
        Effect.ignore(Stream.runForEachWhile(response.stream, () => Effect.succeed(false))),
        Effect.fail(tooLarge())
      )
    }
    if (Number.isFinite(declared) && declared >= 0) {
      // The common case: a declared length within the limit is read in one go (no stream machinery);
      // a body longer than it declared is still refused.
      return Effect.flatMap(
        Effect.mapError(response.arrayBuffer, (error) => transportError(provider, error, meta)),
        (buffer) => (buffer.byteLength > maxBytes ? Effect.fail(tooLarge()) : Effect.succeed(decoder.decode(buffer)))
      )
    }
    const parts: Array<Uint8Array> = []
    let size = 0
    let over = false
    return Stream.runForEachWhile(response.stream, (chunk) =>
      Effect.sync(() => {
        size += chunk.length
        if (size > maxBytes) {
          over = true
          return false
        }
        parts.push(chunk)
        return true
      })
    ).pipe(
      Effect.mapError((error) => transportError(provider, error, meta)),
      Effect.flatMap(() => (over ? Effect.fail(tooLarge()) : Effect.succeed(decoder.decode(concatBytes(parts, size)))))
    )
  })

/**
 * Reads at most `limit` bytes of an error body, for classification. Never fails: a body that
 * cannot be read is `undefined`.
 *
 * @internal
 */
export const readErrorBody = (
  response: HttpClientResponse.HttpClientResponse,
  limit: number = errorBodyLimit
): Effect.Effect<string | undefined> =>
  Effect.suspend(() => {
    const parts: Array<Uint8Array> = []
    let size = 0
    return Stream.runForEachWhile(response.stream, (chunk) =>
      Effect.sync(() => {
        const room = limit - size
        const kept = chunk.length > room ? chunk.subarray(0, room) : chunk
        parts.push(kept)
        size += kept.length
        return size < limit
      })
    ).pipe(
      Effect.map(() => new TextDecoder().decode(concatBytes(parts, size))),
      Effect.orElseSucceed(() => undefined)
    )
  })

/** Deepest JSON nesting accepted from a provider (a JSON bomb would overflow later serialization). */
export const maxJsonDepth = 128

const withinDepth = (root: unknown): boolean => {
  const stack: Array<readonly [unknown, number]> = [[root, 0]]
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!
    if (typeof value !== "object" || value === null) continue
    if (depth >= maxJsonDepth) return false
    for (const child of Array.isArray(value) ? value : Object.values(value)) stack.push([child, depth + 1])
  }
  return true
}

/**
 * `JSON.parse` that cannot throw, and refuses values nested deeper than {@link maxJsonDepth}.
 *
 * @internal
 */
export const parseJson = (text: string): Either.Either<unknown, void> =>
  Either.flatMap(Either.try({ try: (): unknown => JSON.parse(text), catch: () => undefined }), (value) =>
    withinDepth(value) ? Either.right(value) : Either.left(undefined)
  )

/**
 * Parses JSON or gives `undefined`.
 *
 * @internal
 */
export const parseJsonOrUndefined = (text: string | undefined): unknown =>
  text === undefined ? undefined : Either.getOrUndefined(parseJson(text))
