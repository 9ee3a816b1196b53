import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Usage } from "@modelgate/core/ModelResult"
import type { Kind, Meta } from "./classify.js"
import { describe, field, kindForStatus, providerError, stringField } from "./classify.js"
import { knownCode } from "./bounded.js"
import { parseProtoDuration, retryHintMs } from "./retryHints.js"
import { classifyErrorObject } from "./wireError.js"

const details = (error: unknown): ReadonlyArray<unknown> => {
  const value = field(error, "details")
  return Array.isArray(value) ? value : []
}

const detailType = (detail: unknown) => stringField(detail, "@type") ?? ""

const errorInfoReason = (error: unknown): string | undefined => {
  for (const detail of details(error)) {
    if (detailType(detail).endsWith("google.rpc.ErrorInfo")) {
      const reason = stringField(detail, "reason")
      if (reason !== undefined) return reason
    }
  }
  return undefined
}

const quotaIds = (error: unknown): Array<string> => {
  const ids: Array<string> = []
  for (const detail of details(error)) {
    if (!detailType(detail).endsWith("google.rpc.QuotaFailure")) continue
    const violations = field(detail, "violations")
    if (!Array.isArray(violations)) continue
    for (const violation of violations) {
      const id = stringField(violation, "quotaId") ?? stringField(violation, "quotaMetric")
      if (id !== undefined) ids.push(id)
    }
  }
  return ids
}

/**
 * The `RetryInfo.retryDelay` of an error, in milliseconds.
 *
 * @internal
 */
export const retryDelayMs = (error: unknown): number | undefined => {
  for (const detail of details(error)) {
    if (detailType(detail).endsWith("google.rpc.RetryInfo")) {
      const delay = parseProtoDuration(field(detail, "retryDelay"))
      if (delay !== undefined) return delay
    }
  }
  return undefined
}

/**
 * The class named by a google.rpc Status error (`details[]` > `status` > message rules).
 *
 * @internal
 */
export const kindFromBody = (error: unknown, status: number | undefined): Kind | undefined => {
  const reason = errorInfoReason(error)
  if (reason === "API_KEY_INVALID" || reason === "API_KEY_EXPIRED") return "authentication"
  const quotas = quotaIds(error)
  if (quotas.some((id) => /PerDay/i.test(id))) return "quota_exhausted"
  if (quotas.some((id) => /PerMinute/i.test(id))) return "rate_limited"
  const message = stringField(error, "message") ?? ""
  switch (stringField(error, "status")) {
    case "INVALID_ARGUMENT":
      return /input token count.*exceeds/i.test(message) ? "context_length" : "invalid_request"
    case "FAILED_PRECONDITION":
      return "permission"
    case "UNAUTHENTICATED":
      return "authentication"
    case "PERMISSION_DENIED":
      return "permission"
    case "NOT_FOUND":
      return "model_not_found"
    case "RESOURCE_EXHAUSTED":
      if (status === 402) return "quota_exhausted"
      if (/spend/i.test(message)) return "spend_cap"
      return "rate_limited"
    case "INTERNAL":
      return "server_error"
    case "UNAVAILABLE":
      return "overloaded"
    case "DEADLINE_EXCEEDED":
      return "timeout"
  }
  if (retryDelayMs(error) !== undefined && status === 429) return "rate_limited"
  return undefined
}

/**
 * The google.rpc status codes and the `ErrorInfo` reasons of Google APIs. Any other value is
 * recorded as `"other"`: an echoing upstream could put prompt text there.
 *
 * @internal
 */
export const knownCodes: ReadonlySet<string> = new Set([
  // google.rpc.Code
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
  // google.rpc.ErrorInfo reasons
  "API_KEY_INVALID",
  "API_KEY_EXPIRED",
  "API_KEY_SERVICE_BLOCKED",
  "API_KEY_HTTP_REFERRER_BLOCKED",
  "API_KEY_IP_ADDRESS_BLOCKED",
  "SERVICE_DISABLED",
  "BILLING_DISABLED",
  "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
  "CONSUMER_INVALID",
  "USER_PROJECT_DENIED",
  "RATE_LIMIT_EXCEEDED",
  "RESOURCE_QUOTA_EXCEEDED",
  "LOCATION_POLICY_VIOLATED"
])

const codeOf = (error: unknown) => knownCode(knownCodes, errorInfoReason(error), stringField(error, "status"))

/** @internal */
export const classifyError = classifyErrorObject(kindFromBody, codeOf, (input, error) => ({
  retryAfterMs: () => retryHintMs(input.headers, input.nowMs, { bodyDelayMs: retryDelayMs(error) })
}))

/** An error object after HTTP 200 (bare JSON mid-stream, or `data: {"error": …}`). @internal */
export const classifyErrorAfter200 = (provider: string, error: unknown, meta: Meta, usage?: Usage): ProviderError => {
  const rawCode = field(error, "code")
  const status = typeof rawCode === "number" && rawCode >= 400 && rawCode < 600 ? rawCode : undefined
  const code = codeOf(error)
  return providerError({
    kind: kindFromBody(error, status) ?? (status === undefined ? "server_error" : kindForStatus(status)),
    processed: "maybe",
    httpStatus: meta.httpStatus,
    retryAfterMs: retryDelayMs(error),
    requestId: meta.requestId,
    providerCode: code,
    usage,
    detail: describe(
      provider,
      meta.httpStatus,
      code,
      `error after the response started${status ? ` (code ${status})` : ""}`
    )
  })
}
