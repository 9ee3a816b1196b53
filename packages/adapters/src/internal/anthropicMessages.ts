/**
 * The Anthropic Messages wire format (`POST {baseUrl}/messages`).
 *
 * @internal
 */
import { HttpClientRequest } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { ContentPart } from "@modelgate/core/ModelCommand"
import { ToolCall } from "@modelgate/core/ModelCommand"
import type { FinishReason, Usage } from "@modelgate/core/ModelResult"
import type { OptionName, ProviderOptionsAllowlist } from "@modelgate/core/ModelOptions"
import type { ProviderRequest, ProviderResponse } from "@modelgate/core/ProviderAdapter"
import { Either, Schema } from "effect"
import type { Codec, CodecSettings } from "./adapter.js"
import type { Meta } from "./classify.js"
import { field, firstHeader, invalidOutput, isRecord, providerError, stringField } from "./classify.js"
import { modelVersionOf, requestIdOf } from "./bounded.js"
import { parseJson } from "./http.js"
import type { Step, StreamMachine } from "./sse.js"
import { findBareError } from "./sse.js"
import { streamTruncated } from "./wireError.js"
import { addProviderOptions, firstSet, optionRefused, unmappable } from "./options.js"
import { makeUsage, sum, WireCount } from "./usage.js"
import { classifyError, classifyErrorAfter200 } from "./anthropicMessagesErrors.js"
import { guard } from "./wireGuard.js"

/** @internal */
export interface Settings extends CodecSettings {
  /** Full URL of the messages endpoint. */
  readonly url: string
}

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

type Block = Record<string, unknown>

const imageBlock = (url: string, mediaType: string | undefined): Block => {
  const data = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(url)
  if (data !== null) {
    return { type: "image", source: { type: "base64", media_type: mediaType ?? data[1], data: data[2] } }
  }
  return { type: "image", source: { type: "url", url } }
}

/** Media types Claude reads as a `document` block from base64. */
const documentTypes: ReadonlyArray<string> = ["application/pdf"]

/**
 * One part of a user message: text, an image, or a PDF as a `document` block with a base64
 * source; `undefined` for what Messages cannot carry (audio, other files), which the router never
 * sends here unless the target's capabilities claim it.
 */
const userBlock = (part: ContentPart): Block | undefined => {
  switch (part._tag) {
    case "text":
      return { type: "text", text: part.text }
    case "image":
      return imageBlock(part.url, part.mediaType)
    case "file":
      return documentTypes.includes(part.mediaType)
        ? { type: "document", source: { type: "base64", media_type: part.mediaType, data: part.data } }
        : undefined
    case "audio":
      return undefined
  }
}

const unsupportedPart = (provider: string, part: ContentPart) =>
  providerError({
    kind: "invalid_request",
    processed: "no",
    detail: `${provider}: Messages cannot carry ${part._tag === "file" ? `a ${part.mediaType.slice(0, 100)} file` : "audio"} (check the target's capabilities)`
  })

const userBlocks = (
  provider: string,
  content: string | ReadonlyArray<ContentPart>
): Either.Either<Array<Block>, ProviderError> => {
  if (typeof content === "string") return Either.right([{ type: "text", text: content }])
  const blocks: Array<Block> = []
  for (const part of content) {
    const block = userBlock(part)
    if (block === undefined) return Either.left(unsupportedPart(provider, part))
    blocks.push(block)
  }
  return Either.right(blocks)
}

const badToolArguments = (provider: string) =>
  providerError({
    kind: "invalid_request",
    processed: "no",
    detail: `${provider}: an assistant tool call in the conversation has arguments that are not a JSON object`
  })

/**
 * The JSON body for a neutral request. System messages go to the top-level `system`; consecutive
 * messages of one role are merged (tool results become `tool_result` blocks of a user turn).
 *
 * @internal
 */
export const requestBody = (
  request: ProviderRequest,
  provider: string,
  stream: boolean
): Either.Either<Record<string, unknown>, ProviderError> => {
  const system: Array<string> = []
  const turns: Array<{ role: "user" | "assistant"; content: Array<Block> }> = []
  const push = (role: "user" | "assistant", blocks: Array<Block>) => {
    if (blocks.length === 0) return
    const last = turns[turns.length - 1]
    if (last !== undefined && last.role === role) last.content.push(...blocks)
    else turns.push({ role, content: blocks })
  }
  for (const m of request.messages) {
    switch (m._tag) {
      case "system":
        system.push(m.content)
        break
      case "user": {
        const blocks = userBlocks(provider, m.content)
        if (Either.isLeft(blocks)) return Either.left(blocks.left)
        push("user", blocks.right)
        break
      }
      case "assistant": {
        const blocks: Array<Block> = m.content ? [{ type: "text", text: m.content }] : []
        for (const call of m.toolCalls ?? []) {
          const input = parseJson(call.arguments === "" ? "{}" : call.arguments)
          if (Either.isLeft(input) || !isRecord(input.right)) return Either.left(badToolArguments(provider))
          blocks.push({ type: "tool_use", id: call.id, name: call.name, input: input.right })
        }
        push("assistant", blocks)
        break
      }
      case "tool":
        push("user", [{ type: "tool_result", tool_use_id: m.toolCallId, content: m.content }])
        break
    }
  }
  const body: Record<string, unknown> = {
    model: request.target.model,
    max_tokens: request.maxOutputTokens,
    ...(system.length > 0 ? { system: system.join("\n\n") } : {}),
    messages: turns.map((turn) =>
      turn.content.length === 1 && turn.content[0]?.type === "text" && turn.role === "user"
        ? { role: turn.role, content: turn.content[0].text }
        : turn
    )
  }
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.parameters
    }))
  }
  if (request.toolChoice !== undefined) {
    body.tool_choice =
      typeof request.toolChoice !== "string"
        ? { type: "tool", name: request.toolChoice.tool }
        : { type: request.toolChoice === "required" ? "any" : request.toolChoice }
  }
  if (request.output !== undefined) {
    body.output_config = { format: { type: "json_schema", schema: request.output.jsonSchema } }
  }
  const options = applyOptions(body, request, provider)
  if (options !== undefined) return Either.left(options)
  addProviderOptions(request.providerOptions, anthropicProviderOptions, () => body)
  if (isRecord(body.thinking) && body.thinking.type === "enabled" && "top_k" in body) {
    return Either.left(optionRefused(provider, "top_k cannot be combined with a thinking budget"))
  }
  if (stream) body.stream = true
  return Either.right(body)
}

/**
 * The fields Anthropic's `providerOptions` may set: `top_k` and `service_tier`.
 *
 * @internal
 */
export const anthropicProviderOptions: ProviderOptionsAllowlist = {
  top_k: Schema.Int.pipe(Schema.between(1, 1000)),
  service_tier: Schema.Literal("auto", "standard_only")
}

/** Smallest thinking budget Anthropic accepts. @internal */
export const minThinkingBudget = 1024

/** Options the Messages API has no field for. */
const unmappableOptions: ReadonlyArray<OptionName> = ["seed", "presencePenalty", "frequencyPenalty"]

/**
 * Maps the neutral options onto `body` (`temperature`, `top_p`, `stop_sequences`, `thinking`,
 * `output_config.effort`, `tool_choice.disable_parallel_tool_use`, `metadata.user_id`), or says why
 * the request cannot be sent: an option without a field, a temperature above 1, both temperature
 * and topP (refused by Claude 4.5 and later), or a thinking
 * budget with what thinking forbids (a temperature other than 1, `top_p` below 0.95, forced tool
 * use, an output cap too small for the 1024-token minimum budget).
 */
const applyOptions = (
  body: Record<string, unknown>,
  request: ProviderRequest,
  provider: string
): ProviderError | undefined => {
  const o = request.options
  if (o === undefined) return undefined
  const refused = firstSet(o, unmappableOptions)
  if (refused !== undefined) return unmappable(provider, refused, "Messages API")
  if (o.temperature !== undefined) {
    if (o.temperature > 1) return optionRefused(provider, "temperature above 1 is not accepted")
    // Claude 4.5 and later refuse both in one request.
    if (o.topP !== undefined) return optionRefused(provider, "temperature and topP cannot both be set")
    body.temperature = o.temperature
  }
  if (o.topP !== undefined) body.top_p = o.topP
  if (o.stop !== undefined) body.stop_sequences = o.stop
  if (o.reasoningEffort !== undefined) {
    body.output_config = { ...(isRecord(body.output_config) ? body.output_config : {}), effort: o.reasoningEffort }
  }
  if (o.reasoningBudget !== undefined) {
    if (o.reasoningBudget === 0) body.thinking = { type: "disabled" }
    else {
      // budget_tokens counts within max_tokens and must stay below it.
      if (request.maxOutputTokens <= minThinkingBudget) {
        return optionRefused(provider, `a thinking budget needs an output cap above ${minThinkingBudget} tokens`)
      }
      const budget = Math.min(Math.max(o.reasoningBudget, minThinkingBudget), request.maxOutputTokens - 1)
      body.thinking = { type: "enabled", budget_tokens: budget }
      if (o.temperature !== undefined && o.temperature !== 1) {
        return optionRefused(provider, "a temperature other than 1 cannot be combined with a thinking budget")
      }
      if (o.topP !== undefined && o.topP < 0.95) {
        return optionRefused(provider, "topP below 0.95 cannot be combined with a thinking budget")
      }
      if (request.toolChoice !== undefined && request.toolChoice !== "auto" && request.toolChoice !== "none") {
        return optionRefused(provider, "forced tool use cannot be combined with a thinking budget")
      }
    }
  }
  // Only with tools, and not with tool_choice "none" (which takes no other field).
  if (o.parallelToolCalls !== undefined && request.tools.length > 0 && request.toolChoice !== "none") {
    const choice = isRecord(body.tool_choice) ? body.tool_choice : { type: "auto" }
    body.tool_choice = { ...choice, disable_parallel_tool_use: !o.parallelToolCalls }
  }
  if (o.userId !== undefined) body.metadata = { user_id: o.userId }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Wire schemas
// ---------------------------------------------------------------------------------------------

const UsageWire = Schema.Struct({
  input_tokens: WireCount,
  output_tokens: WireCount,
  cache_creation_input_tokens: WireCount,
  cache_read_input_tokens: WireCount,
  output_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ thinking_tokens: WireCount })))
})

const BlockWire = Schema.Struct({
  type: Schema.String,
  text: Schema.optional(Schema.String),
  id: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  input: Schema.optional(Schema.Unknown)
})

/** A non-streamed message as read (exported for the guard's tests). @internal */
export const MessageWire = Schema.Struct({
  id: Schema.optional(Schema.NullOr(Schema.String)),
  model: Schema.optional(Schema.NullOr(Schema.String)),
  content: Schema.Array(BlockWire),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(Schema.NullOr(UsageWire))
})

/** A stream event as read (exported for the guard's tests). @internal */
export const EventWire = Schema.Struct({
  type: Schema.String,
  index: Schema.optional(Schema.Number),
  message: Schema.optional(
    Schema.Struct({
      model: Schema.optional(Schema.NullOr(Schema.String)),
      usage: Schema.optional(Schema.NullOr(UsageWire))
    })
  ),
  content_block: Schema.optional(BlockWire),
  delta: Schema.optional(
    Schema.Struct({
      type: Schema.optional(Schema.String),
      text: Schema.optional(Schema.String),
      partial_json: Schema.optional(Schema.String),
      stop_reason: Schema.optional(Schema.NullOr(Schema.String))
    })
  ),
  usage: Schema.optional(Schema.NullOr(UsageWire))
})

const isMessage = guard(MessageWire)
const isEvent = guard(EventWire)

type UsageCounters = {
  input?: number | null | undefined
  output?: number | null | undefined
  cacheCreation?: number | null | undefined
  cacheRead?: number | null | undefined
  thinking?: number | null | undefined
}

const mergeUsage = (into: UsageCounters, usage: typeof UsageWire.Type | null | undefined) => {
  if (usage == null) return
  if (usage.input_tokens != null) into.input = usage.input_tokens
  if (usage.output_tokens != null) into.output = usage.output_tokens
  if (usage.cache_creation_input_tokens != null) into.cacheCreation = usage.cache_creation_input_tokens
  if (usage.cache_read_input_tokens != null) into.cacheRead = usage.cache_read_input_tokens
  if (usage.output_tokens_details?.thinking_tokens != null) into.thinking = usage.output_tokens_details.thinking_tokens
}

const toUsage = (c: UsageCounters): Usage =>
  makeUsage({
    inputTokens: sum(c.input, c.cacheCreation, c.cacheRead),
    cachedInputTokens: c.cacheRead,
    outputTokens: c.output,
    reasoningTokens: c.thinking
  })

/**
 * Maps `stop_reason`, or gives the error a stop reason stands for.
 *
 * @internal
 */
export const stopReason = (
  provider: string,
  raw: string | null | undefined,
  meta: Meta,
  usage: Usage | undefined
): Either.Either<FinishReason, ProviderError> => {
  switch (raw) {
    case "end_turn":
    case "stop_sequence":
      return Either.right("stop")
    case "tool_use":
      return Either.right("tool_calls")
    case "max_tokens":
      return Either.right("length")
    case "refusal":
      return Either.right("refusal")
    case "model_context_window_exceeded":
      return Either.left(
        providerError({
          kind: "context_length",
          processed: "maybe",
          httpStatus: meta.httpStatus,
          requestId: meta.requestId,
          providerCode: raw,
          usage,
          detail: `${provider}: output stopped at the model's context window`
        })
      )
    case "pause_turn":
      return Either.left(
        invalidOutput(provider, "turn paused (pause_turn); continuation is not supported", meta, usage)
      )
    default:
      return Either.right("other")
  }
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

/** @internal */
export const decodeResponse =
  (provider: string) =>
  (body: unknown, meta: Meta): Either.Either<ProviderResponse, ProviderError> => {
    if (stringField(body, "type") === "error")
      return Either.left(classifyErrorAfter200(provider, field(body, "error"), meta))
    if (!isMessage(body)) return Either.left(invalidOutput(provider, "unexpected response shape", meta))
    const message = body
    const counters: UsageCounters = {}
    mergeUsage(counters, message.usage)
    const usage = message.usage == null ? undefined : toUsage(counters)
    const reason = stopReason(provider, message.stop_reason, meta, usage)
    if (Either.isLeft(reason)) return Either.left(reason.left)
    let text: string | undefined
    const toolCalls: Array<ToolCall> = []
    for (const block of message.content) {
      if (block.type === "text" && block.text !== undefined) text = (text ?? "") + block.text
      else if (block.type === "tool_use") {
        toolCalls.push(
          new ToolCall(
            {
              id: block.id ?? `toolu_${toolCalls.length}`,
              name: block.name ?? "",
              arguments: JSON.stringify(block.input ?? {})
            },
            { disableValidation: true }
          )
        )
      }
    }
    if (reason.right === "stop" && !text && toolCalls.length === 0) {
      return Either.left(invalidOutput(provider, "the answer has no content and no tool calls", meta, usage))
    }
    return Either.right({
      text,
      toolCalls,
      finishReason: reason.right,
      refusal: reason.right === "refusal",
      usage,
      modelVersion: modelVersionOf(message.model),
      requestId: meta.requestId,
      httpStatus: meta.httpStatus
    })
  }

/**
 * The stream machine: `Finish` at `message_stop`; a body that ends before it is truncated.
 *
 * @internal
 */
export const streamMachine =
  (provider: string) =>
  (meta: Meta): StreamMachine => {
    const counters: UsageCounters = {}
    let sawUsage = false
    let model: string | undefined
    let rawStop: string | null | undefined
    let produced = false
    let done = false
    let nextTool = 0
    const tools = new Map<number, { index: number; hadArguments: boolean }>()
    // Content block indexes opened so far: each once, in increasing order.
    let started = false
    let lastBlock = -1
    const usage = () => (sawUsage ? toUsage(counters) : undefined)
    const broken = (what: string) => invalidOutput(provider, what, meta, usage())

    const finish = (): Step => {
      done = true
      const reason = stopReason(provider, rawStop, meta, usage())
      if (Either.isLeft(reason)) return reason.left
      if (reason.right === "stop" && !produced) {
        return invalidOutput(provider, "the answer has no content and no tool calls", meta, usage())
      }
      return [
        {
          _tag: "Finish",
          finishReason: reason.right,
          refusal: reason.right === "refusal",
          usage: usage(),
          modelVersion: modelVersionOf(model)
        }
      ]
    }

    return {
      onEvent(sse) {
        if (done || sse.event === "ping") return []
        const json = parseJson(sse.data)
        if (Either.isLeft(json)) {
          return sse.event === "error"
            ? classifyErrorAfter200(provider, undefined, meta, usage())
            : invalidOutput(provider, "stream event is not JSON", meta, usage())
        }
        if (sse.event === "error" || stringField(json.right, "type") === "error") {
          // Nested (`{"type":"error","error":{…}}`) or flat (the error object itself) shape.
          const nested = field(json.right, "error")
          return classifyErrorAfter200(provider, isRecord(nested) ? nested : json.right, meta, usage())
        }
        const event = json.right
        if (!isEvent(event)) return invalidOutput(provider, "unexpected stream event shape", meta, usage())
        switch (event.type) {
          case "message_start": {
            // A second message in one body (a spliced or replayed stream) is not one answer.
            if (started) return broken("a second message_start mid-stream")
            started = true
            if (event.message?.model != null) model = event.message.model
            if (event.message?.usage != null) {
              sawUsage = true
              mergeUsage(counters, event.message.usage)
              // Input and cache counts, known before the first token.
              return [{ _tag: "Usage", usage: toUsage(counters) }]
            }
            return []
          }
          case "content_block_start": {
            const blockIndex = event.index ?? lastBlock + 1
            if (blockIndex <= lastBlock) return broken("a content block index reused or out of order")
            lastBlock = blockIndex
            const block = event.content_block
            if (block?.type === "text" && block.text) {
              produced = true
              return [{ _tag: "TextDelta", text: block.text }]
            }
            if (block?.type === "tool_use") {
              produced = true
              const index = nextTool++
              tools.set(event.index ?? -1, { index, hadArguments: false })
              return [{ _tag: "ToolCallDelta", index, id: block.id, name: block.name, argumentsDelta: "" }]
            }
            return []
          }
          case "content_block_delta": {
            const delta = event.delta
            if (delta?.type === "text_delta" && delta.text) {
              produced = true
              return [{ _tag: "TextDelta", text: delta.text }]
            }
            if (delta?.type === "input_json_delta" && delta.partial_json) {
              const tool = tools.get(event.index ?? -1)
              if (tool === undefined) return []
              tool.hadArguments = true
              return [
                {
                  _tag: "ToolCallDelta",
                  index: tool.index,
                  id: undefined,
                  name: undefined,
                  argumentsDelta: delta.partial_json
                }
              ]
            }
            return []
          }
          case "content_block_stop": {
            const tool = tools.get(event.index ?? -1)
            // A tool call without arguments still ends as a JSON object.
            if (tool !== undefined && !tool.hadArguments) {
              tool.hadArguments = true
              return [
                { _tag: "ToolCallDelta", index: tool.index, id: undefined, name: undefined, argumentsDelta: "{}" }
              ]
            }
            return []
          }
          case "message_delta": {
            if (event.delta?.stop_reason != null) rawStop = event.delta.stop_reason
            if (event.usage != null) {
              sawUsage = true
              mergeUsage(counters, event.usage)
              // Cumulative output so far.
              return [{ _tag: "Usage", usage: toUsage(counters) }]
            }
            return []
          }
          case "message_stop":
            return finish()
          default:
            return []
        }
      },
      onEnd(tail) {
        if (done) return []
        const bare = findBareError(tail)
        if (bare !== undefined) return classifyErrorAfter200(provider, bare, meta, usage())
        return streamTruncated(provider, meta, usage(), "stream ended without message_stop")
      }
    }
  }

/** @internal */
export const codec = (settings: Settings): Codec => ({
  provider: settings.provider,
  echo: settings.echo,
  providerOptions: anthropicProviderOptions,
  build: (request, stream) =>
    Either.map(requestBody(request, settings.provider, stream), (body) =>
      HttpClientRequest.post(settings.url).pipe(
        settings.authorize,
        HttpClientRequest.accept(stream ? "text/event-stream" : "application/json"),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    ),
  requestId: (headers) => requestIdOf(firstHeader(headers, ["request-id", "x-request-id"])),
  decodeResponse: decodeResponse(settings.provider),
  classifyError: classifyError(settings.provider),
  streamMachine: streamMachine(settings.provider)
})
