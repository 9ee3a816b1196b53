/**
 * The pieces every provider's mock wire format shares: defaults, the scripted text, tool-call
 * arguments and usage, SSE frames, and the providers' error envelopes.
 *
 * @internal
 */
import type { ErrorSpec, Provider, Success, ToolCallSpec, UsageSpec } from "./mockScript.js"

/** A rendered SSE answer, split so that faults can cut it anywhere. @internal */
export interface SseAnswer {
  /** Sent right after the headers (role chunk, `message_start`). */
  readonly preamble: ReadonlyArray<string>
  /** Content frames, paced by TTFT and the inter-chunk delay. */
  readonly chunks: ReadonlyArray<string>
  /** Finish, usage and terminator frames. */
  readonly tail: ReadonlyArray<string>
}

/** @internal */
export const defaultText = "Hello from the mock provider."

const defaultModels: Record<Provider, string> = {
  openai: "gpt-mock-2026-01-01",
  anthropic: "claude-mock-1",
  gemini: "gemini-mock-flash-001",
  "openai-compatible": "local-mock",
  "openai-responses": "gpt-mock-2026-01-01"
}

/** The model version reported: the script's, else the requested model, else a default. @internal */
export const modelOf = (provider: Provider, success: Success, requested: string | undefined): string =>
  success.model ?? requested ?? defaultModels[provider]

/** A JSON object (not an array). @internal */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * A small value that satisfies common JSON Schemas (objects with required properties, strings,
 * numbers, booleans, arrays, enums, consts, unions), so that the default success answers a
 * structured-output request with valid JSON.
 *
 * @internal
 */
export const exampleFor = (schema: unknown, depth = 0): unknown => {
  if (!isObject(schema) || depth > 8) return null
  if ("const" in schema) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const options = schema[key]
    if (Array.isArray(options) && options.length > 0) return exampleFor(options[0], depth + 1)
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (typeof type === "string" ? type.toLowerCase() : isObject(schema.properties) ? "object" : undefined) {
    case "object": {
      const properties = isObject(schema.properties) ? schema.properties : {}
      const required = Array.isArray(schema.required) ? schema.required : Object.keys(properties)
      const out: Record<string, unknown> = {}
      for (const name of required) {
        if (typeof name === "string") out[name] = exampleFor(properties[name], depth + 1)
      }
      return out
    }
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0
      return Array.from({ length: Math.min(min, 3) }, () => exampleFor(schema.items, depth + 1))
    }
    case "string":
      return "example"
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 0
    case "boolean":
      return false
    default:
      return null
  }
}

/** The text of a success: `json` serialized, else `text`, else the default. @internal */
export const textOf = (success: Success): string | undefined =>
  success.json !== undefined ? JSON.stringify(success.json) : success.text === undefined ? defaultText : success.text

/** A scripted tool call's arguments as the JSON text on the wire. @internal */
export const argumentsOf = (call: ToolCallSpec): string =>
  typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {})

/** A scripted tool call's arguments as a JSON value (`{}` when they do not parse). @internal */
export const inputOf = (call: ToolCallSpec): unknown => {
  if (typeof call.arguments !== "string") return call.arguments ?? {}
  try {
    return JSON.parse(call.arguments)
  } catch {
    return {}
  }
}

/** Splits text into pieces of `size` characters (at least one piece, possibly empty). @internal */
export const pieces = (text: string, size: number): Array<string> => {
  if (text.length === 0) return []
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

/** The usage reported: the script's, none when it says `null`, else a default. @internal */
export const usageOf = (success: Success): UsageSpec | undefined =>
  success.usage === null ? undefined : (success.usage ?? { input: 12, output: 7 })

/** The refusal text of a success that refuses. @internal */
export const refusalText = (success: Success) =>
  success.refusal === undefined ? undefined : success.refusal === true ? "I can't help with that." : success.refusal

/** One SSE frame (`event:` line when named). @internal */
export const sse = (data: unknown, event?: string) =>
  `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

const openAiDefaults = (status: number): { type: string; code: string | null } =>
  status === 429
    ? { type: "requests", code: "rate_limit_exceeded" }
    : status === 401
      ? { type: "invalid_request_error", code: "invalid_api_key" }
      : status === 404
        ? { type: "invalid_request_error", code: "model_not_found" }
        : status >= 500
          ? { type: "server_error", code: null }
          : { type: "invalid_request_error", code: null }

const anthropicTypes: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error"
}

const googleStatuses: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  402: "RESOURCE_EXHAUSTED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

/** The error object inside the provider's envelope. @internal */
export const errorObject = (provider: Provider, status: number, spec: ErrorSpec): Record<string, unknown> => {
  const message = spec.message ?? "mock error"
  switch (provider) {
    case "openai":
    case "openai-compatible":
    case "openai-responses": {
      const defaults = openAiDefaults(status)
      return {
        message,
        type: spec.type ?? defaults.type,
        param: null,
        code: spec.code === undefined ? defaults.code : spec.code,
        ...spec.extra
      }
    }
    case "anthropic":
      return {
        type: spec.type ?? anthropicTypes[status] ?? (status >= 500 ? "api_error" : "invalid_request_error"),
        message,
        ...(spec.details === undefined ? {} : { details: spec.details }),
        ...spec.extra
      }
    case "gemini":
      return {
        code: typeof spec.code === "number" ? spec.code : status,
        message,
        status: spec.status ?? googleStatuses[status] ?? (status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT"),
        ...(spec.details === undefined ? {} : { details: spec.details }),
        ...spec.extra
      }
  }
}

/** A complete non-2xx error body. @internal */
export const errorBody = (provider: Provider, status: number, spec: ErrorSpec, requestId: string): string => {
  const error = errorObject(provider, status, spec)
  return JSON.stringify(provider === "anthropic" ? { type: "error", error, request_id: requestId } : { error })
}
