/**
 * Classifies the `AiError`s of an `@effect/ai` provider into modelgate `ProviderError`s
 * (providers.md §9), so that the engine's retries, retry-after hints, fallbacks and breakers work
 * for providers reached through `@effect/ai`:
 *
 * - `HttpResponseError` with a status: the OpenAI-style body codes (`error.code` > `error.type` >
 *   status), `x-should-retry`, and the retry hint (`retry-after-ms`, `retry-after`, the
 *   `x-ratelimit-reset-*` headers of an exhausted limit). The body is read from the error's `body`,
 *   else from its `description` (the generated OpenAI client puts the JSON body there).
 * - `HttpResponseError` without a status problem (a 2xx body that failed to decode): `invalid_output`.
 * - `HttpRequestError`: the transport rules of the raw adapters (connection refused is not
 *   processed; a connection lost after sending may have been).
 * - `MalformedOutput`: `invalid_output`; `MalformedInput`: `invalid_request`; `UnknownError`:
 *   `server_error` (maybe processed).
 *
 * Details stay content-free: codes and statuses, never provider messages.
 *
 * @internal
 */
import type { AiError } from "@effect/ai"
import { Headers, HttpClientError } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Meta } from "../classify.js"
import { field, invalidOutput, isRecord, providerError } from "../classify.js"
import { classifyError, classifyErrorAfter200 } from "../chatCompletionsErrors.js"
import { parseJsonOrUndefined, transportError } from "../http.js"

/**
 * The `ProviderError` of an `AiError` of provider `provider`, at `nowMs` (for HTTP-date hints).
 *
 * @internal
 */
export const classifyAiError = (provider: string, error: AiError.AiError, nowMs: number): ProviderError => {
  switch (error._tag) {
    case "HttpResponseError": {
      const headers = Headers.fromInput(error.response.headers)
      const requestId = headers["x-request-id"]
      const status = error.response.status
      if (error.reason === "StatusCode" && (status < 200 || status >= 300)) {
        const body = parseJsonOrUndefined(error.body) ?? parseJsonOrUndefined(error.description)
        return classifyError(provider)({ status, headers, body, nowMs, requestId })
      }
      return invalidOutput(provider, `the response could not be read (${error.reason})`, {
        httpStatus: status,
        requestId
      })
    }
    case "HttpRequestError":
      if (HttpClientError.isHttpClientError(error.cause)) return transportError(provider, error.cause)
      return providerError({
        kind: error.reason === "Transport" ? "transport" : "invalid_request",
        processed: error.reason === "Transport" ? "maybe" : "no",
        detail: `${provider}: request failed (${error.reason})`
      })
    case "MalformedOutput":
      return providerError({
        kind: "invalid_output",
        processed: "maybe",
        httpStatus: 200,
        detail: `${provider}: malformed output (${error.module}.${error.method})`
      })
    case "MalformedInput":
      return providerError({
        kind: "invalid_request",
        processed: "no",
        detail: `${provider}: malformed input (${error.module}.${error.method})`
      })
    case "UnknownError":
      return providerError({
        kind: "server_error",
        processed: "maybe",
        detail: `${provider}: unknown error (${error.module}.${error.method})`
      })
  }
}

/**
 * The `ProviderError` of an error part of a stream (an `error` event after HTTP 200): the Responses
 * API's flat `{type: "error", code, message}`, its nested `{type: "error", error: {code, …}}`, or
 * a failed response's `{response: {error: {code, …}}}`; its code, else temporary.
 *
 * @internal
 */
export const classifyStreamError = (provider: string, error: unknown): ProviderError => {
  const meta: Meta = { httpStatus: 200, requestId: undefined }
  return classifyErrorAfter200(provider, errorPayload(error), meta)
}

/** The error object of an error event, whichever of its shapes it has. @internal */
export const errorPayload = (event: unknown): unknown => {
  const nested = field(event, "error")
  if (isRecord(nested)) return nested
  const failed = field(field(event, "response"), "error")
  return isRecord(failed) ? failed : event
}
