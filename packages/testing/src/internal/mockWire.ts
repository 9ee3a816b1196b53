/**
 * Renders mock behaviours into each provider's wire format: JSON bodies, SSE frames, error
 * envelopes. Pure functions; the server in `MockProviderServer.ts` adds timing and faults.
 *
 * @internal
 */
import type { ErrorSpec, Provider, Success, ToolCallSpec, UsageSpec } from "./mockScript.js"
import { responsesErrorFrames, responsesRequestedSchema } from "./responsesWire.js"

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

/**
 * The JSON Schema of a structured-output request, in any of the wire formats.
 *
 * @internal
 */
export const requestedSchema = (body: unknown): unknown => {
  if (!isObject(body)) return undefined
  const responseFormat = body.response_format
  if (isObject(responseFormat) && isObject(responseFormat.json_schema)) return responseFormat.json_schema.schema
  const outputConfig = body.output_config
  if (isObject(outputConfig) && isObject(outputConfig.format)) return outputConfig.format.schema
  const generationConfig = body.generationConfig
  if (isObject(generationConfig)) return generationConfig.responseJsonSchema ?? generationConfig.responseSchema
  return responsesRequestedSchema(body)
}

/** The text of a success: `json` serialized, else `text`, else the default. @internal */
export const textOf = (success: Success): string | undefined =>
  success.json !== undefined ? JSON.stringify(success.json) : success.text === undefined ? defaultText : success.text

/** A scripted tool call's arguments as the JSON text on the wire. @internal */
export const argumentsOf = (call: ToolCallSpec): string =>
  typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {})

const inputOf = (call: ToolCallSpec): unknown => {
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

const sse = (data: unknown, event?: string) =>
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

/**
 * Frames of an error after HTTP 200. OpenAI sends `data: {"error": …}`; vLLM-style servers add
 * `data: [DONE]`; Anthropic sends `event: error`; Gemini a bare JSON object (no `data:`).
 *
 * @internal
 */
export const streamErrorFrames = (provider: Provider, spec: ErrorSpec, code: number): Array<string> => {
  const error = errorObject(provider, code, spec)
  switch (provider) {
    case "openai":
      return [sse({ error })]
    case "openai-responses":
      return responsesErrorFrames(spec, code)
    case "openai-compatible":
      return [sse({ error }), sse("[DONE]")]
    case "anthropic":
      return [sse({ type: "error", error }, "error")]
    case "gemini":
      return [JSON.stringify({ error })]
  }
}

// ---------------------------------------------------------------------------------------------
// OpenAI Chat Completions (and compatible servers)
// ---------------------------------------------------------------------------------------------

const openAiUsage = (usage: UsageSpec) => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.input + usage.output,
  prompt_tokens_details: { cached_tokens: usage.cached ?? 0 },
  completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 }
})

const openAiFinish = (success: Success) =>
  success.finishReason ?? (success.toolCalls !== undefined && success.toolCalls.length > 0 ? "tool_calls" : "stop")

const refusalText = (success: Success) =>
  success.refusal === undefined ? undefined : success.refusal === true ? "I can't help with that." : success.refusal

/** @internal */
export const openAiBody = (provider: Provider, success: Success, requested: string | undefined, id: string): string => {
  const refusal = refusalText(success)
  const usage = usageOf(success)
  const toolCalls = success.toolCalls ?? []
  return JSON.stringify({
    id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: modelOf(provider, success, requested),
    system_fingerprint: success.systemFingerprint ?? (provider === "openai" ? "fp_mock" : null),
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: refusal !== undefined ? null : (textOf(success) ?? null),
          refusal: refusal ?? null,
          ...(toolCalls.length > 0
            ? {
                tool_calls: toolCalls.map((call, i) => ({
                  id: call.id ?? `call_mock_${i}`,
                  type: "function",
                  function: { name: call.name, arguments: argumentsOf(call) }
                }))
              }
            : {})
        },
        logprobs: null,
        finish_reason: openAiFinish(success)
      }
    ],
    ...(usage === undefined ? {} : { usage: openAiUsage(usage) })
  })
}

/** @internal */
export const openAiSse = (
  provider: Provider,
  success: Success,
  requested: string | undefined,
  id: string,
  includeUsage: boolean
): SseAnswer => {
  const created = Math.floor(Date.now() / 1000)
  const model = modelOf(provider, success, requested)
  const fingerprint = success.systemFingerprint ?? (provider === "openai" ? "fp_mock" : null)
  const chunk = (choices: ReadonlyArray<unknown>, usage?: unknown) =>
    sse({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      system_fingerprint: fingerprint,
      choices,
      ...(includeUsage ? { usage: usage ?? null } : {})
    })
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }])
  const size = success.chunkSize ?? 16
  const refusal = refusalText(success)
  const chunks: Array<string> = []
  if (refusal !== undefined) {
    for (const piece of pieces(refusal, size)) chunks.push(delta({ refusal: piece }))
  } else {
    for (const piece of pieces(textOf(success) ?? "", size)) chunks.push(delta({ content: piece }))
  }
  for (const [i, call] of (success.toolCalls ?? []).entries()) {
    chunks.push(
      delta({
        tool_calls: [
          { index: i, id: call.id ?? `call_mock_${i}`, type: "function", function: { name: call.name, arguments: "" } }
        ]
      })
    )
    for (const piece of pieces(argumentsOf(call), size)) {
      chunks.push(delta({ tool_calls: [{ index: i, function: { arguments: piece } }] }))
    }
  }
  const usage = usageOf(success)
  return {
    preamble: [delta({ role: "assistant", content: "", refusal: null })],
    chunks,
    tail: [
      delta({}, openAiFinish(success)),
      ...(includeUsage && usage !== undefined ? [chunk([], openAiUsage(usage))] : []),
      sse("[DONE]")
    ]
  }
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------

const anthropicUsage = (usage: UsageSpec) => {
  const cached = usage.cached ?? 0
  const creation = usage.cacheCreation ?? 0
  return {
    input_tokens: Math.max(0, usage.input - cached - creation),
    cache_creation_input_tokens: creation,
    cache_read_input_tokens: cached,
    output_tokens: usage.output,
    ...(usage.reasoning ? { output_tokens_details: { thinking_tokens: usage.reasoning } } : {})
  }
}

const anthropicStop = (success: Success) =>
  success.finishReason ??
  (success.refusal !== undefined
    ? "refusal"
    : success.toolCalls !== undefined && success.toolCalls.length > 0
      ? "tool_use"
      : "end_turn")

const anthropicStopDetails = (success: Success) =>
  success.refusal !== undefined
    ? { type: "refusal", category: "cyber", explanation: refusalText(success) ?? null }
    : null

const anthropicText = (success: Success): string | undefined =>
  success.refusal !== undefined ? (success.text ?? undefined) : textOf(success)

/** @internal */
export const anthropicBody = (success: Success, requested: string | undefined, id: string): string => {
  const text = anthropicText(success)
  const usage = usageOf(success) ?? { input: 0, output: 0 }
  return JSON.stringify({
    id,
    type: "message",
    role: "assistant",
    model: modelOf("anthropic", success, requested),
    content: [
      ...(text !== undefined && text !== "" ? [{ type: "text", text }] : []),
      ...(success.toolCalls ?? []).map((call, i) => ({
        type: "tool_use",
        id: call.id ?? `toolu_mock_${i}`,
        name: call.name,
        input: inputOf(call)
      }))
    ],
    stop_reason: anthropicStop(success),
    stop_sequence: null,
    stop_details: anthropicStopDetails(success),
    usage: anthropicUsage(usage)
  })
}

/** @internal */
export const anthropicSse = (success: Success, requested: string | undefined, id: string): SseAnswer => {
  const usage = anthropicUsage(usageOf(success) ?? { input: 0, output: 0 })
  const size = success.chunkSize ?? 16
  const event = (data: Record<string, unknown> & { type: string }) => sse(data, data.type)
  const chunks: Array<string> = []
  let index = 0
  const text = anthropicText(success)
  if (text !== undefined && text !== "") {
    chunks.push(event({ type: "content_block_start", index, content_block: { type: "text", text: "" } }))
    for (const piece of pieces(text, size)) {
      chunks.push(event({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }))
    }
    chunks.push(event({ type: "content_block_stop", index }))
    index++
  }
  for (const [i, call] of (success.toolCalls ?? []).entries()) {
    chunks.push(
      event({
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: call.id ?? `toolu_mock_${i}`, name: call.name, input: {} }
      })
    )
    for (const piece of pieces(JSON.stringify(inputOf(call)), size)) {
      chunks.push(
        event({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } })
      )
    }
    chunks.push(event({ type: "content_block_stop", index }))
    index++
  }
  return {
    preamble: [
      event({
        type: "message_start",
        message: {
          id,
          type: "message",
          role: "assistant",
          model: modelOf("anthropic", success, requested),
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1 }
        }
      }),
      event({ type: "ping" })
    ],
    chunks,
    tail: [
      event({
        type: "message_delta",
        delta: {
          stop_reason: anthropicStop(success),
          stop_sequence: null,
          stop_details: anthropicStopDetails(success)
        },
        usage: { output_tokens: usage.output_tokens }
      }),
      event({ type: "message_stop" })
    ]
  }
}

// ---------------------------------------------------------------------------------------------
// Gemini
// ---------------------------------------------------------------------------------------------

const geminiUsage = (usage: UsageSpec) => {
  const reasoning = usage.reasoning ?? 0
  return {
    promptTokenCount: usage.input,
    candidatesTokenCount: Math.max(0, usage.output - reasoning),
    totalTokenCount: usage.input + usage.output,
    ...(usage.cached ? { cachedContentTokenCount: usage.cached } : {}),
    ...(reasoning ? { thoughtsTokenCount: reasoning } : {})
  }
}

const geminiParts = (success: Success, text: string | undefined) => [
  ...(text !== undefined && text !== "" ? [{ text }] : []),
  ...(success.toolCalls ?? []).map((call) => ({ functionCall: { name: call.name, args: inputOf(call) } }))
]

const geminiResponse = (
  success: Success,
  requested: string | undefined,
  id: string,
  parts: ReadonlyArray<unknown>,
  final: boolean
): Record<string, unknown> => {
  const usage = usageOf(success)
  if (success.blockReason !== undefined) {
    return {
      promptFeedback: { blockReason: success.blockReason },
      ...(usage === undefined ? {} : { usageMetadata: geminiUsage({ ...usage, output: 0, reasoning: 0 }) }),
      modelVersion: modelOf("gemini", success, requested),
      responseId: id
    }
  }
  return {
    candidates: [
      {
        content: { role: "model", parts },
        ...(final ? { finishReason: success.finishReason ?? "STOP" } : {}),
        index: 0
      }
    ],
    ...(final && usage !== undefined ? { usageMetadata: geminiUsage(usage) } : {}),
    modelVersion: modelOf("gemini", success, requested),
    responseId: id
  }
}

/** @internal */
export const geminiBody = (success: Success, requested: string | undefined, id: string): string =>
  JSON.stringify(geminiResponse(success, requested, id, geminiParts(success, textOf(success)), true))

/** Gemini frames end with `\r\n\r\n`, as Google's servers send them. @internal */
export const geminiSse = (success: Success, requested: string | undefined, id: string): SseAnswer => {
  const frame = (data: unknown) => `data: ${JSON.stringify(data)}\r\n\r\n`
  if (success.blockReason !== undefined) {
    return { preamble: [], chunks: [], tail: [frame(geminiResponse(success, requested, id, [], true))] }
  }
  const size = success.chunkSize ?? 16
  const texts = pieces(textOf(success) ?? "", size)
  // The last text piece rides on the final chunk, with the function calls and the finishReason.
  const last = texts.pop()
  const chunks = texts.map((piece) => frame(geminiResponse(success, requested, id, [{ text: piece }], false)))
  return {
    preamble: [],
    chunks,
    tail: [frame(geminiResponse(success, requested, id, geminiParts(success, last), true))]
  }
}
