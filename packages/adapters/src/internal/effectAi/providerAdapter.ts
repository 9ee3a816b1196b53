/**
 * `@effect/ai` providers used by modelgate (`EffectAi.providerAdapter`): a provider request as an
 * `@effect/ai` prompt and toolkit, and its response parts or stream parts as a provider response
 * or stream events.
 */
import type { Response, Toolkit } from "@effect/ai"
import { type LanguageModel, Prompt, Tool } from "@effect/ai"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ToolCall } from "@modelgate/core/ModelCommand"
import type { FinishReason } from "@modelgate/core/ModelResult"
import type { ProviderRequest, ProviderResponse, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Effect, Either, Option, Schema, Stream } from "effect"
import { modelVersionOf, requestIdOf } from "../bounded.js"
import { providerError } from "../classify.js"
import { classifyStreamError } from "./classify.js"
import { promptFromMessages } from "./prompt.js"
import { makeUsage } from "../usage.js"

const anyParameters = Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))
export const anyObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const decodePrompt = Schema.decodeEither(Prompt.Prompt)
const decodeToolCall = Schema.decodeUnknownEither(ToolCall)

/** What an `@effect/ai` call needs from a provider request. */
interface ModelInput {
  readonly prompt: Prompt.Prompt
  readonly toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> | undefined
  readonly toolChoice: LanguageModel.ToolChoice<string>
}

export const modelInput = (provider: string, request: ProviderRequest): Either.Either<ModelInput, ProviderError> => {
  const refused = (what: string) =>
    Either.left(providerError({ kind: "invalid_request", processed: "no", detail: `${provider}: ${what}` }))
  const messages = promptFromMessages(request.messages)
  if (Either.isLeft(messages)) return refused(messages.left)
  const prompt = decodePrompt({ content: messages.right })
  if (Either.isLeft(prompt)) return refused("the messages do not form an @effect/ai prompt")
  let toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> | undefined
  if (request.tools.length > 0) {
    const tools: Record<string, Tool.Any> = {}
    for (const definition of request.tools) {
      // The parameters are the definition's JSON Schema, sent as is; any object decodes.
      tools[definition.name] = Tool.make(definition.name, { description: definition.description }).setParameters(
        anyParameters.annotations({ jsonSchema: definition.parameters })
      )
    }
    // modelgate returns tool calls to its caller: @effect/ai never resolves them here.
    toolkit = { tools, handle: () => Effect.dieMessage("modelgate resolves no tool calls in an adapter") }
  }
  const choice = request.toolChoice
  return Either.right({
    prompt: prompt.right,
    toolkit,
    toolChoice: choice === undefined ? "auto" : typeof choice === "string" ? choice : { tool: choice.tool }
  })
}

/** A refusal a provider reported in a text part's metadata (`@effect/ai-openai`: `metadata.openai.refusal`). */
export const isRefusalPart = (part: Response.AnyPart): boolean =>
  part.type === "text" && Object.values(part.metadata).some((m) => typeof m?.refusal === "string")

const fromFinishReason = (reason: Response.FinishReason | undefined): FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool-calls":
      return "tool_calls"
    case "content-filter":
      return "content_filter"
    default:
      return "other"
  }
}

const usageOf = (usage: Response.Usage) =>
  makeUsage({
    inputTokens: usage.inputTokens,
    cachedInputTokens: usage.cachedInputTokens,
    outputTokens: usage.outputTokens,
    reasoningTokens: usage.reasoningTokens
  })

/** A provider response from the parts of a complete `@effect/ai` answer. */
export const fromParts = (
  provider: string,
  parts: ReadonlyArray<Response.AnyPart>
): Either.Either<ProviderResponse, ProviderError> => {
  let text = ""
  let refusal = false
  let finish: Response.FinishPart | undefined
  let modelVersion: string | undefined
  let responseId: string | undefined
  const toolCalls: Array<ToolCall> = []
  for (const part of parts) {
    switch (part.type) {
      case "text":
        if (isRefusalPart(part)) refusal = true
        else text += part.text
        break
      case "tool-call": {
        if (part.providerExecuted) break
        const call = decodeToolCall({ id: part.id, name: part.name, arguments: JSON.stringify(part.params ?? {}) })
        if (Either.isLeft(call))
          return Either.left(
            providerError({
              kind: "invalid_output",
              processed: "maybe",
              httpStatus: 200,
              detail: `${provider}: a tool call is out of bounds`
            })
          )
        toolCalls.push(call.right)
        break
      }
      case "response-metadata":
        modelVersion = modelVersionOf(Option.getOrUndefined(part.modelId))
        responseId = Option.getOrUndefined(part.id)
        break
      case "finish":
        finish = part
        break
    }
  }
  const reason = fromFinishReason(finish?.reason)
  return Either.right({
    text: text === "" ? undefined : text,
    toolCalls,
    finishReason: refusal ? "refusal" : reason,
    refusal: refusal || reason === "content_filter",
    usage: finish === undefined ? undefined : usageOf(finish.usage),
    modelVersion,
    requestId: requestIdOf(responseId),
    httpStatus: 200
  })
}

/** Provider stream events from `@effect/ai` stream parts. */
export const streamEvents = <E>(
  provider: string,
  parts: Stream.Stream<Response.AnyPart, ProviderError | E>
): Stream.Stream<ProviderStreamEvent, ProviderError | E> =>
  Stream.suspend(() => {
    let started = false
    let finished = false
    let modelVersion: string | undefined
    const indexes = new Map<string, number>()
    const withArguments = new Set<string>()
    const onPart = (part: Response.AnyPart): Either.Either<ReadonlyArray<ProviderStreamEvent>, ProviderError> => {
      const out: Array<ProviderStreamEvent> = []
      if (!started) {
        started = true
        const id = part.type === "response-metadata" ? Option.getOrUndefined(part.id) : undefined
        out.push({ _tag: "Started", requestId: requestIdOf(id), httpStatus: 200 })
      }
      if (finished) return Either.right(out)
      switch (part.type) {
        case "response-metadata":
          modelVersion = modelVersionOf(Option.getOrUndefined(part.modelId)) ?? modelVersion
          break
        case "text-delta":
          if (part.delta !== "") out.push({ _tag: "TextDelta", text: part.delta })
          break
        case "tool-params-start": {
          const index = indexes.size
          indexes.set(part.id, index)
          out.push({ _tag: "ToolCallDelta", index, id: part.id, name: part.name, argumentsDelta: "" })
          break
        }
        case "tool-params-delta": {
          const index = indexes.get(part.id)
          if (index === undefined || part.delta === "") break
          withArguments.add(part.id)
          out.push({ _tag: "ToolCallDelta", index, id: undefined, name: undefined, argumentsDelta: part.delta })
          break
        }
        case "tool-call": {
          if (part.providerExecuted || withArguments.has(part.id)) break
          const known = indexes.get(part.id)
          const index = known ?? indexes.size
          if (known === undefined) indexes.set(part.id, index)
          out.push({
            _tag: "ToolCallDelta",
            index,
            id: known === undefined ? part.id : undefined,
            name: known === undefined ? part.name : undefined,
            argumentsDelta: JSON.stringify(part.params ?? {})
          })
          break
        }
        case "error":
          return Either.left(classifyStreamError(provider, part.error))
        case "finish":
          finished = true
          out.push({
            _tag: "Finish",
            finishReason: fromFinishReason(part.reason),
            refusal: part.reason === "content-filter",
            usage: usageOf(part.usage),
            modelVersion
          })
          break
      }
      return Either.right(out)
    }
    const truncated = providerError({
      kind: "stream_truncated",
      processed: "maybe",
      httpStatus: 200,
      detail: `${provider}: the stream ended without a finish`
    })
    return parts.pipe(
      Stream.mapEffect((part) => onPart(part)),
      Stream.flattenIterables,
      Stream.concat(Stream.suspend(() => (finished ? Stream.empty : Stream.fail(truncated))))
    )
  })
