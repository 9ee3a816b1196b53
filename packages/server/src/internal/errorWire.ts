/**
 * Gateway errors as HTTP: a status, the OpenAI error JSON (`{ error: { message, type, param, code } }`)
 * and headers (`retry-after`, the call id and attempts). Messages come from the error's tag and
 * reason only — never a stack, a provider body or request content.
 *
 * @internal
 */
import type { Errors } from "@modelgate/core"
import { Duration } from "effect"

export interface WireError {
  readonly status: number
  readonly type: string
  readonly code: string
  readonly message: string
  readonly param?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

export const wire = (
  status: number,
  type: string,
  code: string,
  message: string,
  headers?: Readonly<Record<string, string>>
): WireError => ({ status, type, code, message, headers })

export const errorBody = (error: WireError) => ({
  error: { message: error.message, type: error.type, param: error.param ?? null, code: error.code }
})

const seconds = (duration: Duration.Duration | undefined, fallback: number): string =>
  String(duration === undefined ? fallback : Math.max(1, Math.ceil(Duration.toMillis(duration) / 1000)))

const evidenceHeaders = (error: Errors.GatewayError): Record<string, string> => {
  const headers: Record<string, string> = { "x-modelgate-error": error._tag }
  if (error.callId !== undefined) headers["x-modelgate-call-id"] = error.callId
  headers["x-modelgate-attempts"] = String(error.attempts.length)
  return headers
}

/** The status, type and message of each gateway error. */
export const fromGatewayError = (error: Errors.GatewayError): WireError => {
  const headers = evidenceHeaders(error)
  switch (error._tag) {
    case "InvalidRequest":
      return wire(
        400,
        "invalid_request_error",
        error.reason === "context_length" ? "context_length_exceeded" : error.reason,
        `invalid request (${error.reason})`,
        headers
      )
    case "Refusal":
      return wire(422, "refusal", "refusal", `the model declined (${error.source})`, headers)
    case "InvalidOutput":
      return wire(422, "invalid_output", "invalid_output", "no route produced output valid for the workflow", headers)
    case "RateLimited":
      return wire(429, "rate_limit_error", "upstream_rate_limited", "every route is rate limited", {
        ...headers,
        "retry-after": seconds(error.retryAfter, 1)
      })
    case "BudgetExceeded":
      return wire(429, "insufficient_quota", "budget_exceeded", "the tenant's budget cannot cover this call", {
        ...headers,
        "retry-after": "60"
      })
    case "RunExhausted":
      return wire(429, "insufficient_quota", "run_exhausted", `agent run exhausted (${error.reason})`, headers)
    case "DeadlineExceeded":
      return wire(504, "timeout", "deadline_exceeded", `deadline exceeded (${error.stage})`, headers)
    case "ProviderUnavailable": {
      const status = error.reason === "overloaded" ? 503 : error.reason === "timeout" ? 504 : 502
      const retry = error.retryAfter === undefined ? {} : { "retry-after": seconds(error.retryAfter, 1) }
      return wire(status, "upstream_error", "upstream_unavailable", `upstream unavailable (${error.reason})`, {
        ...headers,
        ...retry
      })
    }
    case "ProviderRejected":
      return wire(502, "upstream_error", "upstream_rejected", `upstream rejected the call (${error.reason})`, headers)
    case "AmbiguousOutcome":
      return wire(
        502,
        "upstream_error",
        "ambiguous_outcome",
        "the outcome of an attempt is unknown; not retried",
        headers
      )
    case "PolicyViolation":
      return wire(503, "policy_violation", "policy_violation", `no route within policy (${error.reason})`, headers)
    case "NoEligibleRoute": {
      const unavailable = error.excluded.length > 0 && error.excluded.every((e) => e.reason === "BREAKER_OPEN")
      return unavailable
        ? wire(503, "upstream_error", "no_available_route", "every route is unavailable", {
            ...headers,
            "retry-after": "5"
          })
        : wire(
            400,
            "invalid_request_error",
            "no_eligible_route",
            `no route of the workflow satisfies the request (${[...new Set(error.excluded.map((e) => e.reason))].join(", ")})`,
            headers
          )
    }
    case "StoreError":
      return wire(503, "server_error", "store_unavailable", `a ${error.store} store is unavailable`, {
        ...headers,
        "retry-after": "1"
      })
  }
}

export const invalidBody = (problems: ReadonlyArray<string>, param?: string): WireError => ({
  ...wire(400, "invalid_request_error", "invalid_body", `invalid request body: ${problems.slice(0, 20).join("; ")}`),
  param
})

export const unauthorized = wire(
  401,
  "invalid_request_error",
  "invalid_api_key",
  "missing or invalid API key (Authorization: Bearer <key>)"
)

export const modelNotFound = (param = "model"): WireError => ({
  ...wire(404, "invalid_request_error", "model_not_found", "the model does not exist or this key may not call it"),
  param
})

export const rateLimited = (retryAfterSeconds: number): WireError =>
  wire(429, "rate_limit_error", "rate_limit_exceeded", "the key's rate limit is reached", {
    "retry-after": String(retryAfterSeconds)
  })

export const overloaded = wire(503, "server_error", "server_overloaded", "too many requests in flight", {
  "retry-after": "1"
})

export const notFound = wire(404, "invalid_request_error", "not_found", "no such route")

export const internal = wire(500, "server_error", "internal_error", "internal error")
