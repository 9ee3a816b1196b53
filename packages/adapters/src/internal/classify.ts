/**
 * Shared pieces of the classification of providers.md §9: status defaults, the `processed` rule,
 * `x-should-retry`, and the construction of {@link ProviderError}s whose `detail` never holds
 * provider messages (they can echo prompt content), only codes and statuses.
 *
 * @internal
 */
import type { Headers } from "@effect/platform"
import { isTemporaryKind } from "@modelgate/core/Disposition"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Usage } from "@modelgate/core/ModelResult"
import { Duration } from "effect"
import { otherCode, requestIdOf } from "./bounded.js"

/** @internal */
export type Kind = ProviderError["kind"]

/** @internal */
export type Processed = ProviderError["processed"]

/**
 * The class of an HTTP status when the body names nothing more specific.
 *
 * @internal
 */
export const kindForStatus = (status: number): Kind => {
  switch (status) {
    case 400:
    case 422:
      return "invalid_request"
    case 401:
      return "authentication"
    case 402:
      return "quota_exhausted"
    case 403:
      return "permission"
    case 404:
      return "model_not_found"
    case 408:
      return "timeout"
    case 409:
      return "server_error"
    case 413:
      return "request_too_large"
    case 429:
      return "rate_limited"
    case 503:
    case 529:
      return "overloaded"
    case 504:
      return "timeout"
    default:
      return status >= 400 && status < 500 ? "invalid_request" : "server_error"
  }
}

/**
 * Whether a non-2xx status proves the request was not processed: every 4xx (the provider refused
 * to serve it) and the overload statuses 503 / 529. Other 5xx (500, 502, 504) may come after work.
 *
 * @internal
 */
export const processedForStatus = (status: number): Processed =>
  (status >= 400 && status < 500) || status === 503 || status === 529 ? "no" : "maybe"

/**
 * Applies `x-should-retry` (Stainless providers): `false` turns a temporary class into a
 * permanent `rejected` (no retry on this target, fallback allowed); `true` turns a class that came
 * only from the HTTP status (no body code matched) into a temporary `server_error`. Which classes
 * are temporary is the engine's disposition table (`Disposition.isTemporaryKind`).
 *
 * @internal
 */
export const applyShouldRetry = (kind: Kind, header: string | undefined, fromStatusOnly: boolean): Kind => {
  const value = header?.trim().toLowerCase()
  if (value === "false" && isTemporaryKind(kind)) return "rejected"
  if (value === "true" && fromStatusOnly && !isTemporaryKind(kind)) return "server_error"
  return kind
}

/**
 * First header present among `names`.
 *
 * @internal
 */
export const firstHeader = (headers: Headers.Headers, names: ReadonlyArray<string>): string | undefined => {
  for (const name of names) {
    const value = headers[name]
    if (value !== undefined && value !== "") return value
  }
  return undefined
}

/** @internal */
export interface ErrorFields {
  readonly kind: Kind
  readonly processed: Processed
  readonly httpStatus?: number | undefined
  readonly retryAfterMs?: number | undefined
  readonly requestId?: string | undefined
  readonly providerCode?: string | undefined
  readonly usage?: Usage | undefined
  readonly detail: string
}

/**
 * Last guard on codes: short identifiers only. The codecs already map provider codes onto their
 * known enumeration (`knownCode`); transport codes come from the local runtime.
 */
const safeCode = (code: string | undefined): string | undefined =>
  code !== undefined && /^[A-Za-z0-9_.:-]{1,64}$/.test(code) ? code : undefined

/**
 * Builds a {@link ProviderError}. The request id is bounded here too (`requestIdOf`), whatever
 * the caller passed.
 *
 * @internal
 */
export const providerError = (fields: ErrorFields): ProviderError =>
  new ProviderError(
    {
      kind: fields.kind,
      processed: fields.processed,
      httpStatus:
        fields.httpStatus !== undefined && Number.isInteger(fields.httpStatus) ? fields.httpStatus : undefined,
      retryAfter: fields.retryAfterMs === undefined ? undefined : Duration.millis(fields.retryAfterMs),
      requestId: requestIdOf(fields.requestId),
      providerCode: safeCode(fields.providerCode),
      usage: fields.usage,
      detail: fields.detail
    },
    { disableValidation: true }
  )

/**
 * A short, content-free description: `"openai: HTTP 429 (rate_limit_exceeded)"`. `code` is a
 * known code (`knownCode`); `"other"` is left out.
 *
 * @internal
 */
export const describe = (provider: string, status: number | undefined, code: string | undefined, what?: string) =>
  [
    `${provider}:`,
    what,
    status === undefined ? undefined : `HTTP ${status}`,
    code === otherCode || safeCode(code) === undefined ? undefined : `(${code})`
  ]
    .filter((part): part is string => part !== undefined)
    .join(" ")

/**
 * The error of a 200 answer that cannot be used.
 *
 * @internal
 */
export const invalidOutput = (provider: string, what: string, meta: Meta, usage?: Usage | undefined) =>
  providerError({
    kind: "invalid_output",
    processed: "maybe",
    httpStatus: meta.httpStatus,
    requestId: meta.requestId,
    usage,
    detail: `${provider}: ${what}`
  })

/** What is known about the response an event or body belongs to. @internal */
export interface Meta {
  readonly httpStatus: number | undefined
  readonly requestId: string | undefined
}

/**
 * Reads `record[key]` of an unknown value.
 *
 * @internal
 */
export const field = (value: unknown, key: string): unknown => (isRecord(value) ? value[key] : undefined)

/** @internal */
export const stringField = (value: unknown, key: string): string | undefined => {
  const v = field(value, key)
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined
}

/** @internal */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
