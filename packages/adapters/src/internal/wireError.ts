/**
 * The two error shapes every wire codec builds the same way: a non-2xx answer once its body has
 * been read for a class and a code, and a stream that ended before its terminator.
 *
 * @internal
 */
import type { Headers } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Usage } from "@modelgate/core/ModelResult"
import type { Kind, Meta } from "./classify.js"
import {
  applyShouldRetry,
  describe,
  field,
  isRecord,
  kindForStatus,
  processedForStatus,
  providerError
} from "./classify.js"

/** A non-2xx answer as a codec's `classifyError` receives it. @internal */
export interface StatusInput {
  readonly status: number
  readonly headers: Headers.Headers
  readonly body: unknown
  readonly nowMs: number
  readonly requestId: string | undefined
}

/** What a codec read from an error body. @internal */
export interface BodyReading {
  /** The class the body names; `undefined` when only the status can tell. */
  readonly kind: Kind | undefined
  /** The known provider code (`knownCode`). */
  readonly code: string | undefined
  /** The retry hint for the final class. */
  readonly retryAfterMs: (kind: Kind) => number | undefined
  /** A request id from the body, when the headers have none. */
  readonly requestId?: string | undefined
}

/**
 * The `ProviderError` of a non-2xx answer: the body's class, else the status's, through
 * `x-should-retry`; `processed` from the status; a content-free detail.
 *
 * @internal
 */
export const statusError = (provider: string, input: StatusInput, reading: BodyReading): ProviderError => {
  const kind = applyShouldRetry(
    reading.kind ?? kindForStatus(input.status),
    input.headers["x-should-retry"],
    reading.kind === undefined
  )
  return providerError({
    kind,
    processed: processedForStatus(input.status),
    httpStatus: input.status,
    retryAfterMs: reading.retryAfterMs(kind),
    requestId: input.requestId ?? reading.requestId,
    providerCode: reading.code,
    detail: describe(provider, input.status, reading.code)
  })
}

/**
 * `classifyError` of a wire whose error object sits under `error`: its class and code read by
 * `kindFromBody` and `codeOf`, the retry hint and body request id by `hints`.
 *
 * @internal
 */
export const classifyErrorObject =
  (
    kindFromBody: (error: unknown, status: number) => Kind | undefined,
    codeOf: (error: unknown) => string | undefined,
    hints: (input: StatusInput, error: unknown) => Pick<BodyReading, "retryAfterMs" | "requestId">
  ) =>
  (provider: string) =>
  (input: StatusInput): ProviderError => {
    const error = field(input.body, "error")
    return statusError(provider, input, {
      kind: isRecord(error) ? kindFromBody(error, input.status) : undefined,
      code: codeOf(error),
      ...hints(input, error)
    })
  }

/**
 * A stream whose body ended before its terminator (`what` says which).
 *
 * @internal
 */
export const streamTruncated = (provider: string, meta: Meta, usage: Usage | undefined, what: string): ProviderError =>
  providerError({
    kind: "stream_truncated",
    processed: "maybe",
    httpStatus: meta.httpStatus,
    requestId: meta.requestId,
    usage,
    detail: `${provider}: ${what}`
  })
