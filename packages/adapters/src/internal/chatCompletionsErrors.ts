import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Kind, Meta } from "./classify.js"
import { describe, field, isRecord, kindForStatus, providerError, stringField } from "./classify.js"
import { knownCode } from "./bounded.js"
import { retryHintMs } from "./retryHints.js"
import type { StatusInput } from "./wireError.js"
import { statusError } from "./wireError.js"

const quotaCodes: ReadonlySet<string> = new Set([
  "insufficient_quota",
  "credit_balance_exhausted",
  "organization_usage_limit_exceeded"
])
const spendCodes: ReadonlySet<string> = new Set(["organization_spend_limit_exceeded", "project_spend_limit_exceeded"])

/** Codes of a provider's safety system refusing the input or output. */
const policyCodes: ReadonlySet<string> = new Set([
  "content_filter",
  "content_policy_violation",
  "ResponsibleAIPolicyViolation"
])

/**
 * Whether an error object is a safety-filter block: OpenAI's `content_policy_violation`, Azure
 * OpenAI's `content_filter` (inner `ResponsibleAIPolicyViolation`), OpenRouter's 403 moderation
 * flag (`metadata.reasons`).
 */
const isPolicyBlock = (error: unknown, code: string | undefined, status: number | undefined): boolean =>
  (code !== undefined && policyCodes.has(code)) ||
  policyCodes.has(stringField(field(error, "innererror"), "code") ?? "") ||
  (status === 403 && Array.isArray(field(field(error, "metadata"), "reasons")))

/**
 * The class named by an OpenAI-style error object, in the order `code` > `type` > message rules;
 * `undefined` when only the status can tell.
 *
 * @internal
 */
export const kindFromBody = (error: unknown, status: number | undefined): Kind | undefined => {
  const code = stringField(error, "code")
  const type = stringField(error, "type")
  const message = stringField(error, "message") ?? ""
  if (isPolicyBlock(error, code, status)) return "refusal"
  if (code === "tool_use_failed") return "invalid_output"
  if (code !== undefined) {
    if (spendCodes.has(code)) return "spend_cap"
    if (quotaCodes.has(code)) return "quota_exhausted"
    if (code === "context_length_exceeded") return "context_length"
    if (code === "invalid_prompt") return "refusal"
  }
  if (type === "insufficient_quota") return "quota_exhausted"
  if (type === "exceed_context_size_error") return "context_length"
  // A single request larger than the TPM limit: permanent on this route.
  if (status === 429 && /^\s*request too large/i.test(message)) return "request_too_large"
  if (code === "rate_limit_exceeded" || code === "slow_down") return "rate_limited"
  if (code === "model_not_found") return "model_not_found"
  if (code === "invalid_api_key") return "authentication"
  if (code === "server_is_overloaded") return "overloaded"
  switch (type) {
    case "rate_limit_error":
    case "requests":
    case "tokens":
      return "rate_limited"
    case "authentication_error":
      return "authentication"
    case "permission_error":
      return "permission"
    case "not_found_error":
    case "NotFoundError":
      return "model_not_found"
    case "service_unavailable_error":
    case "unavailable_error":
      return "overloaded"
    case "server_error":
    case "api_error":
    case "InternalServerError":
      // Generic: a known status says more (504 timeout, 503 overloaded).
      return status === undefined ? "server_error" : undefined
    case "not_supported_error":
      return "invalid_request"
  }
  // vLLM and llama.cpp describe context overflow only in the message.
  if (
    (status === undefined || status === 400) &&
    /maximum context length|exceeds? the available context size/i.test(message)
  ) {
    return "context_length"
  }
  return undefined
}

/** The error object of an OpenAI-style body (`{"error": {...}}`, or vLLM's old flat form). @internal */
export const errorObject = (body: unknown): unknown => {
  const nested = field(body, "error")
  if (isRecord(nested)) return nested
  if (stringField(body, "object") === "error") return body
  return undefined
}

/**
 * The `code` and `type` values OpenAI and the compatible servers (vLLM, Ollama, llama.cpp) document.
 * Any other value is recorded as `"other"`: an echoing upstream could put prompt text there.
 *
 * @internal
 */
export const knownCodes: ReadonlySet<string> = new Set([
  // OpenAI `code`
  ...quotaCodes,
  ...spendCodes,
  "context_length_exceeded",
  "invalid_prompt",
  "rate_limit_exceeded",
  "slow_down",
  "model_not_found",
  "invalid_api_key",
  "server_is_overloaded",
  "server_error",
  "unsupported_country_region_territory",
  "invalid_organization",
  "invalid_project",
  "account_deactivated",
  "content_policy_violation",
  "content_filter",
  "tool_use_failed",
  "invalid_value",
  "invalid_type",
  "unknown_parameter",
  "unsupported_parameter",
  "unsupported_value",
  "missing_required_parameter",
  "invalid_image",
  "invalid_image_url",
  "invalid_image_format",
  "image_too_large",
  "string_above_max_length",
  "array_above_max_length",
  "empty_array",
  "integer_above_max_value",
  "integer_below_min_value",
  // OpenAI `type`
  "invalid_request_error",
  "rate_limit_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "api_error",
  "insufficient_quota",
  "requests",
  "tokens",
  "service_unavailable_error",
  // vLLM, Ollama, llama.cpp `type`
  "BadRequestError",
  "NotFoundError",
  "InternalServerError",
  "unavailable_error",
  "exceed_context_size_error",
  "not_supported_error"
])

const codeOf = (error: unknown) => knownCode(knownCodes, stringField(error, "code"), stringField(error, "type"))

/** The reset headers of an exhausted request or token limit. */
const rateLimitResets: ReadonlyArray<readonly [string, string]> = [
  ["x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"],
  ["x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"]
]

/**
 * Classifies a non-2xx answer.
 *
 * @internal
 */
export const classifyError =
  (provider: string) =>
  (input: StatusInput): ProviderError => {
    const error = errorObject(input.body)
    return statusError(provider, input, {
      kind: error === undefined ? undefined : kindFromBody(error, input.status),
      code: codeOf(error),
      retryAfterMs: (kind) =>
        retryHintMs(
          input.headers,
          input.nowMs,
          kind === "rate_limited" ? { resetHeaders: rateLimitResets, resetFormat: "go" } : {}
        )
    })
  }

/**
 * Classifies an error object that arrived after HTTP 200 (in the body or as a stream event).
 * vLLM and llama.cpp put the HTTP status in `code`; otherwise the class comes from the codes, and
 * an unknown error is temporary.
 *
 * @internal
 */
export const classifyErrorAfter200 = (provider: string, error: unknown, meta: Meta): ProviderError => {
  const rawCode = field(error, "code")
  const status = typeof rawCode === "number" && rawCode >= 400 && rawCode < 600 ? rawCode : undefined
  const kind = kindFromBody(error, status) ?? (status === undefined ? "server_error" : kindForStatus(status))
  const code = codeOf(error)
  return providerError({
    kind,
    processed: "maybe",
    httpStatus: meta.httpStatus,
    requestId: meta.requestId,
    providerCode: code,
    detail: describe(provider, meta.httpStatus, code, "error after the response started")
  })
}
