import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Usage } from "@modelgate/core/ModelResult"
import type { Kind, Meta } from "./classify.js"
import { describe, field, providerError, stringField } from "./classify.js"
import { knownCode, requestIdOf } from "./bounded.js"
import { retryHintMs } from "./retryHints.js"
import { classifyErrorObject } from "./wireError.js"

/**
 * The class named by an Anthropic error object (`details.error_code` > `type` > message rules).
 *
 * @internal
 */
export const kindFromBody = (error: unknown, status: number | undefined): Kind | undefined => {
  if (stringField(field(error, "details"), "error_code") === "enforced_spend_limit_reached") return "spend_cap"
  const message = stringField(error, "message") ?? ""
  switch (stringField(error, "type")) {
    case "invalid_request_error":
      if (/prompt is too long|exceed context limit|context window/i.test(message)) return "context_length"
      if (/specified api usage limits/i.test(message)) return "spend_cap"
      return status === undefined || status === 400 ? "invalid_request" : undefined
    case "authentication_error":
      return "authentication"
    case "permission_error":
      return "permission"
    case "not_found_error":
      return "model_not_found"
    case "billing_error":
      return "quota_exhausted"
    case "request_too_large":
      return "request_too_large"
    case "rate_limit_error":
      return "rate_limited"
    case "api_error":
      return "server_error"
    case "timeout_error":
      return "timeout"
    case "overloaded_error":
      return "overloaded"
    default:
      return undefined
  }
}

/**
 * The error `type`s and `details.error_code`s Anthropic documents. Any other value is recorded as
 * `"other"`: an echoing upstream could put prompt text there.
 *
 * @internal
 */
export const knownCodes: ReadonlySet<string> = new Set([
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "billing_error",
  "request_too_large",
  "rate_limit_error",
  "api_error",
  "timeout_error",
  "overloaded_error",
  "enforced_spend_limit_reached"
])

const codeOf = (error: unknown) =>
  knownCode(knownCodes, stringField(field(error, "details"), "error_code"), stringField(error, "type"))

const resetHeaders: ReadonlyArray<readonly [string, string]> = [
  "requests",
  "tokens",
  "input-tokens",
  "output-tokens"
].map((limit) => [`anthropic-ratelimit-${limit}-reset`, `anthropic-ratelimit-${limit}-remaining`] as const)

/**
 * Classifies a non-2xx answer.
 *
 * @internal
 */
export const classifyError = classifyErrorObject(kindFromBody, codeOf, (input) => ({
  retryAfterMs: (kind) =>
    retryHintMs(input.headers, input.nowMs, kind === "rate_limited" ? { resetHeaders, resetFormat: "rfc3339" } : {}),
  requestId: requestIdOf(stringField(input.body, "request_id"))
}))

/** @internal */
export const classifyErrorAfter200 = (provider: string, error: unknown, meta: Meta, usage?: Usage): ProviderError => {
  const code = codeOf(error)
  return providerError({
    kind: kindFromBody(error, undefined) ?? "server_error",
    processed: "maybe",
    httpStatus: meta.httpStatus,
    requestId: meta.requestId,
    providerCode: code,
    usage,
    detail: describe(provider, meta.httpStatus, code, "error after the response started")
  })
}
