/**
 * The OpenAI Chat Completions wire format (`POST …/chat/completions`), shared by the OpenAI adapter
 * and the OpenAI-compatible one (vLLM, Ollama, llama.cpp). A {@link Dialect} carries what differs.
 *
 * @internal
 */
import { HttpClientRequest } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { ContentPart, Message } from "@modelgate/core/ModelCommand"
import type { OptionName, ProviderOptionsAllowlist } from "@modelgate/core/ModelOptions"
import { ToolCall } from "@modelgate/core/ModelCommand"
import type { FinishReason } from "@modelgate/core/ModelResult"
import type { ProviderRequest, ProviderResponse, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Either, Schema } from "effect"
import type { Codec } from "./adapter.js"
import type { EchoRules } from "./echo.js"
import type { Meta } from "./classify.js"
import { firstHeader, invalidOutput } from "./classify.js"
import { modelVersionOf, requestIdOf } from "./bounded.js"
import { parseJson } from "./http.js"
import type { Step, StreamMachine } from "./sse.js"
import { findBareError } from "./sse.js"
import { streamTruncated } from "./wireError.js"
import { guard } from "./wireGuard.js"
import { addProviderOptions, firstSet, LogitBias, unmappable } from "./options.js"
import { count, makeUsage, sum, WireCount } from "./usage.js"
import { errorObject, classifyError, classifyErrorAfter200 } from "./chatCompletionsErrors.js"

/** What differs between OpenAI and the OpenAI-compatible servers. @internal */
export interface Dialect {
  readonly provider: string
  /** Full URL of the chat completions endpoint. */
  readonly url: string
  readonly maxTokensField: "max_completion_tokens" | "max_tokens"
  readonly systemRole: "system" | "developer"
  /** Send `stream_options: { include_usage: true }` with `stream: true`. */
  readonly streamUsage: boolean
  /** Adds credentials and static headers. */
  readonly authorize: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
  /** Wire field of the `userId` option. Default `"safety_identifier"` (OpenAI; the servers read `user`). */
  readonly userField?: "safety_identifier" | "user" | undefined
  /** Fields `providerOptions` may set. Default {@link openAiProviderOptions}. */
  readonly providerOptions?: ProviderOptionsAllowlist | undefined
  /** What the server's echoes are checked against (`echo.ts`). */
  readonly echo: EchoRules
}

/**
 * The fields OpenAI's `providerOptions` may set: `service_tier`, `logprobs`, `top_logprobs`,
 * `logit_bias`, `verbosity`.
 *
 * @internal
 */
export const openAiProviderOptions: ProviderOptionsAllowlist = {
  service_tier: Schema.Literal("auto", "default", "flex", "priority"),
  logprobs: Schema.Boolean,
  top_logprobs: Schema.Int.pipe(Schema.between(0, 20)),
  logit_bias: LogitBias,
  verbosity: Schema.Literal("low", "medium", "high")
}

/**
 * The fields an OpenAI-compatible server's `providerOptions` may set: `logprobs`, `top_logprobs`,
 * `logit_bias`, and the extra sampling fields of vLLM, Ollama and llama.cpp (`top_k`, `min_p`,
 * `repetition_penalty`).
 *
 * @internal
 */
export const compatibleProviderOptions: ProviderOptionsAllowlist = {
  logprobs: Schema.Boolean,
  top_logprobs: Schema.Int.pipe(Schema.between(0, 20)),
  logit_bias: LogitBias,
  top_k: Schema.Int.pipe(Schema.between(-1, 1000)),
  min_p: Schema.Number.pipe(Schema.finite(), Schema.between(0, 1)),
  repetition_penalty: Schema.Number.pipe(Schema.finite(), Schema.greaterThan(0), Schema.lessThanOrEqualTo(2))
}

/** Options Chat Completions has no field for. */
const unmappableOptions: ReadonlyArray<OptionName> = ["reasoningBudget"]

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

/**
 * One part of a user message: text, `image_url`, `input_audio` (`{ data, format }`, base64) or
 * `file` (`{ file_data, filename }`, the base64 as a `data:` URL). The router sends an audio or
 * file part only to a target whose capabilities list its format or media type.
 */
const userPart = (part: ContentPart): Record<string, unknown> => {
  switch (part._tag) {
    case "text":
      return { type: "text", text: part.text }
    case "image":
      return { type: "image_url", image_url: { url: part.url } }
    case "audio":
      return { type: "input_audio", input_audio: { data: part.data, format: part.format } }
    case "file":
      return {
        type: "file",
        file: { file_data: `data:${part.mediaType};base64,${part.data}`, filename: part.filename ?? "file" }
      }
  }
}

const message = (m: Message, dialect: Dialect): Record<string, unknown> => {
  switch (m._tag) {
    case "system":
      return { role: dialect.systemRole, content: m.content }
    case "user":
      return {
        role: "user",
        content: typeof m.content === "string" ? m.content : m.content.map(userPart)
      }
    case "assistant":
      return {
        role: "assistant",
        content: m.content ?? null,
        ...(m.toolCalls !== undefined && m.toolCalls.length > 0
          ? {
              tool_calls: m.toolCalls.map((call) => ({
                id: call.id,
                type: "function",
                function: { name: call.name, arguments: call.arguments }
              }))
            }
          : {})
      }
    case "tool":
      return { role: "tool", tool_call_id: m.toolCallId, content: m.content }
  }
}

/**
 * The JSON body for a neutral request.
 *
 * @internal
 */
export const requestBody = (request: ProviderRequest, dialect: Dialect, stream: boolean): Record<string, unknown> => {
  const body: Record<string, unknown> = {
    model: request.target.model,
    messages: request.messages.map((m) => message(m, dialect)),
    [dialect.maxTokensField]: request.maxOutputTokens
  }
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters }
    }))
  }
  if (request.toolChoice !== undefined) {
    body.tool_choice =
      typeof request.toolChoice === "string"
        ? request.toolChoice
        : { type: "function", function: { name: request.toolChoice.tool } }
  }
  if (request.output !== undefined) {
    body.response_format = {
      type: "json_schema",
      json_schema: { name: request.output.name, schema: request.output.jsonSchema, strict: request.output.strict }
    }
  }
  const o = request.options
  if (o !== undefined) {
    if (o.temperature !== undefined) body.temperature = o.temperature
    if (o.topP !== undefined) body.top_p = o.topP
    if (o.seed !== undefined) body.seed = o.seed
    if (o.stop !== undefined) body.stop = o.stop
    if (o.reasoningEffort !== undefined) body.reasoning_effort = o.reasoningEffort
    // Only with tools: OpenAI refuses parallel_tool_calls without them.
    if (o.parallelToolCalls !== undefined && request.tools.length > 0) body.parallel_tool_calls = o.parallelToolCalls
    if (o.presencePenalty !== undefined) body.presence_penalty = o.presencePenalty
    if (o.frequencyPenalty !== undefined) body.frequency_penalty = o.frequencyPenalty
    if (o.userId !== undefined) body[dialect.userField ?? "safety_identifier"] = o.userId
  }
  addProviderOptions(request.providerOptions, dialect.providerOptions ?? openAiProviderOptions, () => body)
  if (stream) {
    body.stream = true
    if (dialect.streamUsage) body.stream_options = { include_usage: true }
  }
  return body
}

// ---------------------------------------------------------------------------------------------
// Wire schemas (never trust provider JSON)
// ---------------------------------------------------------------------------------------------

const UsageWire = Schema.Struct({
  prompt_tokens: WireCount,
  completion_tokens: WireCount,
  total_tokens: WireCount,
  prompt_tokens_details: Schema.optional(
    Schema.NullOr(Schema.Struct({ cached_tokens: WireCount, audio_tokens: WireCount }))
  ),
  completion_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ reasoning_tokens: WireCount })))
})

/** A message's content: text, or (Mistral's reasoning models) an array of typed parts. */
const ContentValue = Schema.NullOr(
  Schema.Union(
    Schema.String,
    Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.NullOr(Schema.String)) }))
  )
)
const ContentWire = Schema.optional(ContentValue)

/** The answer text of a content value: the string, or its `text` parts joined (thinking parts left out). */
const textOf = (content: typeof ContentValue.Type | undefined): string | undefined => {
  if (content == null || typeof content === "string") return content ?? undefined
  let text = ""
  for (const part of content) if (part.type === "text" && part.text != null) text += part.text
  return text
}

const ToolCallWire = Schema.Struct({
  index: Schema.optional(Schema.Number),
  id: Schema.optional(Schema.NullOr(Schema.String)),
  function: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        name: Schema.optional(Schema.NullOr(Schema.String)),
        arguments: Schema.optional(Schema.NullOr(Schema.String))
      })
    )
  )
})

/** A non-streamed completion as read (exported for the guard's tests). @internal */
export const CompletionWire = Schema.Struct({
  id: Schema.optional(Schema.NullOr(Schema.String)),
  model: Schema.optional(Schema.NullOr(Schema.String)),
  system_fingerprint: Schema.optional(Schema.NullOr(Schema.String)),
  choices: Schema.Array(
    Schema.Struct({
      finish_reason: Schema.optional(Schema.NullOr(Schema.String)),
      message: Schema.Struct({
        content: ContentWire,
        refusal: Schema.optional(Schema.NullOr(Schema.String)),
        tool_calls: Schema.optional(Schema.NullOr(Schema.Array(ToolCallWire)))
      })
    })
  ),
  usage: Schema.optional(Schema.NullOr(UsageWire))
})

/** A stream chunk as read (exported for the guard's tests). @internal */
export const ChunkWire = Schema.Struct({
  id: Schema.optional(Schema.NullOr(Schema.String)),
  model: Schema.optional(Schema.NullOr(Schema.String)),
  system_fingerprint: Schema.optional(Schema.NullOr(Schema.String)),
  choices: Schema.optional(
    Schema.NullOr(
      Schema.Array(
        Schema.Struct({
          index: Schema.optional(Schema.Number),
          finish_reason: Schema.optional(Schema.NullOr(Schema.String)),
          delta: Schema.optional(
            Schema.NullOr(
              Schema.Struct({
                content: ContentWire,
                refusal: Schema.optional(Schema.NullOr(Schema.String)),
                tool_calls: Schema.optional(Schema.NullOr(Schema.Array(ToolCallWire)))
              })
            )
          )
        })
      )
    )
  ),
  usage: Schema.optional(Schema.NullOr(UsageWire))
})

const isCompletion = guard(CompletionWire)
const isChunk = guard(ChunkWire)

/**
 * Usage of a completion. Where `total_tokens` shows reasoning counted outside `completion_tokens`
 * (xAI: `total = prompt + completion + reasoning`), the output is completion plus reasoning;
 * otherwise reasoning is a part of completion (OpenAI).
 */
const toUsage = (usage: typeof UsageWire.Type | null | undefined) => {
  if (usage == null) return undefined
  const reasoning = count(usage.completion_tokens_details?.reasoning_tokens)
  const outside =
    reasoning > 0 &&
    count(usage.total_tokens) >= sum(usage.prompt_tokens, usage.completion_tokens) + reasoning &&
    reasoning > count(usage.completion_tokens)
  return makeUsage({
    inputTokens: usage.prompt_tokens,
    cachedInputTokens: usage.prompt_tokens_details?.cached_tokens,
    // Reported (as 0 too) by audio-capable models only.
    audioInputTokens: usage.prompt_tokens_details?.audio_tokens,
    outputTokens: outside ? sum(usage.completion_tokens, reasoning) : usage.completion_tokens,
    reasoningTokens: reasoning
  })
}

/**
 * Maps `finish_reason`; a refusal field wins.
 *
 * @internal
 */
export const finishReason = (raw: string | null | undefined, refusal: boolean): FinishReason => {
  if (refusal) return "refusal"
  switch (raw) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool_calls"
    case "content_filter":
      return "content_filter"
    default:
      return "other"
  }
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

const emptyOutput = (provider: string, meta: Meta, usage: ProviderResponse["usage"]) =>
  invalidOutput(provider, "the answer has no content and no tool calls", meta, usage)

/**
 * Decodes a non-streamed completion.
 *
 * @internal
 */
export const decodeResponse =
  (provider: string) =>
  (body: unknown, meta: Meta): Either.Either<ProviderResponse, ProviderError> => {
    const error = errorObject(body)
    if (error !== undefined) return Either.left(classifyErrorAfter200(provider, error, meta))
    if (!isCompletion(body)) return Either.left(invalidOutput(provider, "unexpected response shape", meta))
    const completion = body
    const usage = toUsage(completion.usage)
    const choice = completion.choices[0]
    if (choice === undefined) return Either.left(invalidOutput(provider, "response has no choices", meta, usage))
    const refusal = choice.message.refusal != null && choice.message.refusal !== ""
    const toolCalls = (choice.message.tool_calls ?? []).map(
      (call, index) =>
        new ToolCall(
          {
            id: call.id ?? `call_${index}`,
            name: call.function?.name ?? "",
            arguments: call.function?.arguments ?? ""
          },
          { disableValidation: true }
        )
    )
    const reason = finishReason(choice.finish_reason, refusal)
    const text = textOf(choice.message.content)
    if (reason === "stop" && !text && toolCalls.length === 0) return Either.left(emptyOutput(provider, meta, usage))
    return Either.right({
      text,
      toolCalls,
      finishReason: reason,
      refusal: refusal || reason === "content_filter",
      usage,
      modelVersion: modelVersionOf(completion.model, completion.system_fingerprint),
      requestId: meta.requestId ?? requestIdOf(completion.id),
      httpStatus: meta.httpStatus
    })
  }

/**
 * The stream machine: deltas as they come, `Finish` at `data: [DONE]`.
 *
 * @internal
 */
export const streamMachine =
  (provider: string) =>
  (meta: Meta): StreamMachine => {
    let rawFinish: string | null | undefined
    let refusal = false
    let usage: ProviderResponse["usage"]
    let model: string | null | undefined
    let fingerprint: string | null | undefined
    let produced = false
    let done = false
    // Tool calls by wire index (their id once known), and the highest index opened so far.
    const toolIds = new Map<number, string | undefined>()
    let lastIndex = -1

    const broken = (what: string) => invalidOutput(provider, what, meta, usage)

    /** A tool-call delta, or the reason the stream is not one answer (a reused or backward index). */
    const toolDelta = (call: typeof ToolCallWire.Type, position: number): ProviderStreamEvent | ProviderError => {
      const index = call.index ?? position
      const id = call.id == null || call.id === "" ? undefined : call.id
      if (!toolIds.has(index)) {
        if (index < lastIndex) return broken("a tool call opened on an index below an earlier one")
        lastIndex = index
        toolIds.set(index, id)
      } else if (id !== undefined) {
        const known = toolIds.get(index)
        if (known !== undefined && known !== id) return broken("a second tool call on an index already used")
        toolIds.set(index, id)
      }
      const name = call.function?.name
      return {
        _tag: "ToolCallDelta",
        index,
        id,
        name: name == null || name === "" ? undefined : name,
        argumentsDelta: call.function?.arguments ?? ""
      }
    }

    const finish = (): Step => {
      done = true
      const reason = finishReason(rawFinish, refusal)
      if (reason === "stop" && !produced) return emptyOutput(provider, meta, usage)
      return [
        {
          _tag: "Finish",
          finishReason: reason,
          refusal: refusal || reason === "content_filter",
          usage,
          modelVersion: modelVersionOf(model, fingerprint)
        }
      ]
    }

    return {
      onEvent(event) {
        if (done) return []
        if (event.data === "[DONE]") return finish()
        const json = parseJson(event.data)
        if (Either.isLeft(json)) {
          return event.event === "error"
            ? classifyErrorAfter200(provider, undefined, meta)
            : invalidOutput(provider, "stream chunk is not JSON", meta, usage)
        }
        const error = errorObject(json.right) ?? (event.event === "error" ? json.right : undefined)
        if (error !== undefined) return classifyErrorAfter200(provider, error, meta)
        const chunk = json.right
        if (!isChunk(chunk)) return invalidOutput(provider, "unexpected stream chunk shape", meta, usage)
        if (chunk.model != null && chunk.model !== "") {
          if (model != null && model !== chunk.model) return broken("the model changed mid-stream")
          model = chunk.model
        }
        if (chunk.system_fingerprint != null) fingerprint = chunk.system_fingerprint
        if (chunk.usage != null) usage = toUsage(chunk.usage)
        const out: Array<ProviderStreamEvent> = []
        for (const choice of chunk.choices ?? []) {
          if ((choice.index ?? 0) !== 0) continue
          const delta = choice.delta
          const text = textOf(delta?.content)
          if (text) {
            produced = true
            out.push({ _tag: "TextDelta", text })
          }
          if (delta?.refusal != null && delta.refusal !== "") refusal = true
          for (const [position, call] of (delta?.tool_calls ?? []).entries()) {
            produced = true
            const event = toolDelta(call, position)
            if (event._tag === "ProviderError") return event
            out.push(event)
          }
          if (choice.finish_reason != null) rawFinish = choice.finish_reason
        }
        // `stream_options.include_usage`: the usage chunk (`choices: []`) before `[DONE]`.
        if (chunk.usage != null && usage !== undefined) out.push({ _tag: "Usage", usage })
        return out
      },
      onEnd(tail) {
        if (done) return []
        const bare = findBareError(tail)
        if (bare !== undefined) return classifyErrorAfter200(provider, bare, meta)
        return streamTruncated(provider, meta, usage, "stream ended without [DONE]")
      }
    }
  }

/**
 * The codec of a dialect.
 *
 * @internal
 */
export const codec = (dialect: Dialect): Codec => ({
  provider: dialect.provider,
  echo: dialect.echo,
  providerOptions: dialect.providerOptions ?? openAiProviderOptions,
  build: (request, stream) => {
    const refused = firstSet(request.options, unmappableOptions)
    if (refused !== undefined) return Either.left(unmappable(dialect.provider, refused, "Chat Completions"))
    return Either.right(
      HttpClientRequest.post(dialect.url).pipe(
        dialect.authorize,
        HttpClientRequest.accept(stream ? "text/event-stream" : "application/json"),
        HttpClientRequest.bodyUnsafeJson(requestBody(request, dialect, stream))
      )
    )
  },
  requestId: (headers) => requestIdOf(firstHeader(headers, ["x-request-id", "request-id"])),
  decodeResponse: decodeResponse(dialect.provider),
  classifyError: classifyError(dialect.provider),
  streamMachine: streamMachine(dialect.provider)
})
