/**
 * OpenAI Chat Completions on the wire: the request body's Schema, its mapping onto a ModelCommand's
 * fields (never a target, URL or credential: the workflow named by `model` decides), and the
 * response object and stream chunks built from a ModelResult and StreamEvents.
 *
 * @internal
 */
import type { ModelResult, StreamEvent } from "@modelgate/core"
import { Schema } from "effect"
import { evidenceSummary } from "./evidenceWire.js"

const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
const ImagePart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String, detail: Schema.optional(Schema.String) })
})
const TextContent = Schema.Union(Schema.String, Schema.Array(TextPart))

const FunctionCall = Schema.Struct({
  id: Schema.String,
  type: Schema.optional(Schema.Literal("function")),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})

const ChatMessage = Schema.Union(
  Schema.Struct({ role: Schema.Literal("system", "developer"), content: TextContent }),
  Schema.Struct({
    role: Schema.Literal("user"),
    content: Schema.Union(Schema.String, Schema.Array(Schema.Union(TextPart, ImagePart)))
  }),
  Schema.Struct({
    role: Schema.Literal("assistant"),
    content: Schema.optional(Schema.NullOr(TextContent)),
    tool_calls: Schema.optional(Schema.Array(FunctionCall))
  }),
  Schema.Struct({ role: Schema.Literal("tool"), tool_call_id: Schema.String, content: TextContent })
)
type ChatMessage = typeof ChatMessage.Type

export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String,
    description: Schema.optional(Schema.String),
    parameters: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
    strict: Schema.optional(Schema.NullOr(Schema.Boolean))
  })
})

const ToolChoice = Schema.Union(
  Schema.Literal("auto", "none", "required"),
  Schema.Struct({ type: Schema.Literal("function"), function: Schema.Struct({ name: Schema.String }) })
)

export const ResponseFormat = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    json_schema: Schema.Struct({
      name: Schema.String,
      schema: Schema.optional(Schema.Unknown),
      strict: Schema.optional(Schema.NullOr(Schema.Boolean)),
      description: Schema.optional(Schema.String)
    })
  })
)

/** Sampling fields shared by both OpenAI endpoints, in wire names. */
export const samplingFields = {
  temperature: Schema.optional(Schema.NullOr(Schema.Number)),
  top_p: Schema.optional(Schema.NullOr(Schema.Number)),
  parallel_tool_calls: Schema.optional(Schema.NullOr(Schema.Boolean)),
  user: Schema.optional(Schema.String)
}

/** The body of `POST /v1/chat/completions`; fields not listed are ignored (`n` and `logprobs` are checked). */
export const ChatRequest = Schema.Struct({
  model: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  messages: Schema.Array(ChatMessage).pipe(Schema.minItems(1)),
  tools: Schema.optional(Schema.Array(FunctionTool)),
  tool_choice: Schema.optional(ToolChoice),
  response_format: Schema.optional(ResponseFormat),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }))),
  seed: Schema.optional(Schema.NullOr(Schema.Int)),
  stop: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Array(Schema.String)))),
  max_tokens: Schema.optional(Schema.NullOr(Schema.Int)),
  max_completion_tokens: Schema.optional(Schema.NullOr(Schema.Int)),
  presence_penalty: Schema.optional(Schema.NullOr(Schema.Number)),
  frequency_penalty: Schema.optional(Schema.NullOr(Schema.Number)),
  reasoning_effort: Schema.optional(Schema.NullOr(Schema.String)),
  n: Schema.optional(Schema.NullOr(Schema.Int)),
  logprobs: Schema.optional(Schema.NullOr(Schema.Boolean)),
  ...samplingFields
})
export type ChatRequest = typeof ChatRequest.Type

/** Fields of a command built from a request, before the server adds workflow and tenant. */
export type CommandFields = Record<string, unknown>

const textOf = (content: string | ReadonlyArray<{ readonly text: string }>): string =>
  typeof content === "string" ? content : content.map((p) => p.text).join("")

/** The messages of a request as ModelCommand messages (tool names looked up by call id). */
export const messagesOf = (messages: ReadonlyArray<ChatMessage>): Array<Record<string, unknown>> => {
  const toolNames = new Map<string, string>()
  return messages.map((m) => {
    switch (m.role) {
      case "system":
      case "developer":
        return { _tag: "system", content: textOf(m.content) }
      case "user":
        return {
          _tag: "user",
          content:
            typeof m.content === "string"
              ? m.content
              : m.content.map((p) =>
                  p.type === "text" ? { _tag: "text", text: p.text } : { _tag: "image", url: p.image_url.url }
                )
        }
      case "assistant": {
        const calls = (m.tool_calls ?? []).map((c) => {
          toolNames.set(c.id, c.function.name)
          return { id: c.id, name: c.function.name, arguments: c.function.arguments }
        })
        const out: Record<string, unknown> = { _tag: "assistant" }
        if (m.content !== undefined && m.content !== null) out.content = textOf(m.content)
        if (calls.length > 0) out.toolCalls = calls
        return out
      }
      default:
        return {
          _tag: "tool",
          toolCallId: m.tool_call_id,
          name: (toolNames.get(m.tool_call_id) ?? "tool").slice(0, 64),
          content: textOf(m.content)
        }
    }
  })
}

export const toolsOf = (tools: ReadonlyArray<typeof FunctionTool.Type> | undefined) =>
  tools?.map((t) => ({
    name: t.function.name,
    description: t.function.description ?? "",
    parameters: t.function.parameters ?? { type: "object", properties: {} }
  }))

/** Sets `key` to `value` when the value is neither null nor undefined. */
export const put = (target: Record<string, unknown>, key: string, value: unknown): void => {
  if (value !== undefined && value !== null) target[key] = value
}

/** The neutral sampling options of wire fields. */
export const optionsOf = (body: {
  readonly temperature?: number | null | undefined
  readonly top_p?: number | null | undefined
  readonly seed?: number | null | undefined
  readonly stop?: string | ReadonlyArray<string> | null | undefined
  readonly presence_penalty?: number | null | undefined
  readonly frequency_penalty?: number | null | undefined
  readonly parallel_tool_calls?: boolean | null | undefined
  readonly reasoning_effort?: string | null | undefined
  readonly user?: string | undefined
}): Record<string, unknown> | undefined => {
  const options: Record<string, unknown> = {}
  put(options, "temperature", body.temperature)
  put(options, "topP", body.top_p)
  put(options, "seed", body.seed)
  put(options, "stop", typeof body.stop === "string" ? [body.stop] : body.stop)
  put(options, "presencePenalty", body.presence_penalty)
  put(options, "frequencyPenalty", body.frequency_penalty)
  put(options, "parallelToolCalls", body.parallel_tool_calls)
  put(options, "reasoningEffort", body.reasoning_effort)
  put(options, "userId", body.user)
  return Object.keys(options).length === 0 ? undefined : options
}

/** A problem of the request the ModelCommand cannot express, or `undefined`. */
export const unsupported = (body: ChatRequest, structured: boolean): string | undefined => {
  if (body.n !== undefined && body.n !== null && body.n !== 1) return "$.n: only 1 is supported"
  if (body.logprobs === true) return "$.logprobs: not supported"
  if (body.response_format !== undefined && body.response_format.type !== "text" && !structured)
    return "$.response_format: the workflow does not produce structured output"
  return undefined
}

/** The ModelCommand fields of a chat request. */
export const commandOf = (body: ChatRequest): CommandFields => {
  const fields: CommandFields = { messages: messagesOf(body.messages) }
  put(fields, "tools", toolsOf(body.tools))
  if (body.tool_choice !== undefined)
    fields.toolChoice =
      typeof body.tool_choice === "string" ? body.tool_choice : { tool: body.tool_choice.function.name }
  put(fields, "maxOutputTokens", body.max_completion_tokens ?? body.max_tokens)
  put(fields, "options", optionsOf(body))
  if (body.stream === true) fields.requires = { streaming: true }
  return fields
}

const finishReasons: Record<ModelResult.FinishReason, string> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  content_filter: "content_filter",
  refusal: "content_filter",
  other: "stop"
}

export const finishReasonOf = (reason: ModelResult.FinishReason): string => finishReasons[reason]

export const usageOf = (usage: ModelResult.Usage) => ({
  prompt_tokens: usage.inputTokens,
  completion_tokens: usage.outputTokens,
  total_tokens: usage.inputTokens + usage.outputTokens,
  prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
  completion_tokens_details: { reasoning_tokens: usage.reasoningTokens }
})

/** The answer's text: the model's text, else the structured value as JSON (a degraded answer). */
export const contentText = (result: ModelResult.ModelResult): string | null =>
  result.content.text ?? (result.content.value === undefined ? null : JSON.stringify(result.content.value))

/** The `chat.completion` object of a result. */
export const completionOf = (result: ModelResult.ModelResult, model: string, created: number) => {
  const toolCalls = result.content.toolCalls.map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.name, arguments: c.arguments }
  }))
  const message: Record<string, unknown> = { role: "assistant", content: contentText(result), refusal: null }
  if (toolCalls.length > 0) message.tool_calls = toolCalls
  return {
    id: `chatcmpl-${result.evidence.callId}`,
    object: "chat.completion",
    created,
    model,
    choices: [{ index: 0, message, finish_reason: finishReasonOf(result.finishReason), logprobs: null }],
    usage: usageOf(result.evidence.usage),
    system_fingerprint: null
  }
}

/** Renders stream events as `data:` frames of `chat.completion.chunk`s. */
export const makeChunker = (id: string, model: string, created: number, includeUsage: boolean) => {
  let sentRole = false
  let sentText = false
  const chunk = (choices: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, system_fingerprint: null, choices, ...extra })}\n\n`
  const delta = (d: Record<string, unknown>) => {
    const withRole = sentRole ? d : { role: "assistant", ...d }
    sentRole = true
    return chunk([{ index: 0, delta: withRole, finish_reason: null, logprobs: null }])
  }
  return (event: StreamEvent.StreamEvent): ReadonlyArray<string> => {
    switch (event._tag) {
      case "TextDelta":
        sentText = true
        return [delta({ content: event.text })]
      case "ToolCallDelta": {
        const call: Record<string, unknown> = { index: event.index, function: { arguments: event.argumentsDelta } }
        if (event.id !== undefined) {
          call.id = event.id
          call.type = "function"
        }
        if (event.name !== undefined) call.function = { name: event.name, arguments: event.argumentsDelta }
        return [delta({ tool_calls: [call] })]
      }
      case "Final": {
        const result = event.result
        const frames: Array<string> = []
        const text = contentText(result)
        if (!sentText && text !== null && result.content.toolCalls.length === 0) frames.push(delta({ content: text }))
        else if (!sentRole) frames.push(delta({ content: "" }))
        frames.push(
          chunk([{ index: 0, delta: {}, finish_reason: finishReasonOf(result.finishReason), logprobs: null }])
        )
        if (includeUsage) frames.push(chunk([], { usage: usageOf(result.evidence.usage) }))
        frames.push(chunk([], { modelgate: evidenceSummary(result.evidence) }))
        frames.push("data: [DONE]\n\n")
        return frames
      }
      // Usage goes out once, in the final usage chunk (`stream_options.include_usage`).
      case "RouteSelected":
      case "RouteCommitted":
      case "PartialObject":
      case "UsageUpdate":
      case "UsageReported":
        return []
    }
  }
}
