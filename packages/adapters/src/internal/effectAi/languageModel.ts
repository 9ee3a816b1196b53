/**
 * `@effect/ai` served by modelgate (`EffectAi.languageModel`): gateway failures as `AiError`s, and
 * a gateway answer or stream as `@effect/ai` response parts.
 */
import type { Response } from "@effect/ai"
import { AiError } from "@effect/ai"
import type { GatewayError } from "@modelgate/core/Errors"
import type { ToolCall } from "@modelgate/core/ModelCommand"
import type { FinishReason, ModelResult } from "@modelgate/core/ModelResult"
import type { StreamEvent } from "@modelgate/core/StreamEvent"
import { Either, Stream } from "effect"

export const toAiError = (error: GatewayError, method: string): AiError.AiError => {
  const fields = { module: "ModelGateway", method, description: `${error._tag}: ${error.message}`, cause: error }
  switch (error._tag) {
    case "InvalidRequest":
      return new AiError.MalformedInput(fields, { disableValidation: true })
    case "InvalidOutput":
      return new AiError.MalformedOutput(fields, { disableValidation: true })
    default:
      return new AiError.UnknownError(fields, { disableValidation: true })
  }
}

export const malformedInput = (method: string, description: string, cause?: unknown) =>
  new AiError.MalformedInput({ module: "EffectAi", method, description, cause }, { disableValidation: true })

const finishReasons: Record<FinishReason, Response.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool-calls",
  content_filter: "content-filter",
  refusal: "content-filter",
  other: "other"
}

/** The text of a result: the answer's text, else the JSON of a value without text (a degraded answer). */
const textOf = (result: ModelResult): string | undefined =>
  result.content.text ??
  (result.content.value === undefined || result.content.value === null
    ? undefined
    : JSON.stringify(result.content.value))

const toolCallPart = (call: ToolCall, method: string): Either.Either<Response.ToolCallPartEncoded, AiError.AiError> => {
  try {
    return Either.right({ type: "tool-call", id: call.id, name: call.name, params: JSON.parse(call.arguments) })
  } catch (cause) {
    return Either.left(
      new AiError.MalformedOutput(
        {
          module: "EffectAi",
          method,
          description: `the arguments of tool call ${call.id.slice(0, 64)} are not JSON`,
          cause
        },
        { disableValidation: true }
      )
    )
  }
}

const metadataPart = (result: ModelResult): Response.ResponseMetadataPartEncoded => ({
  type: "response-metadata",
  id: result.evidence.callId,
  modelId: result.evidence.modelVersion ?? result.evidence.model,
  timestamp: new Date(result.evidence.startedAt).toISOString()
})

const finishPart = (result: ModelResult): Response.FinishPartEncoded => {
  const usage = result.evidence.usage
  return {
    type: "finish",
    reason: finishReasons[result.finishReason],
    usage: {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      totalTokens: usage.inputTokens + usage.outputTokens,
      reasoningTokens: usage.reasoningTokens,
      cachedInputTokens: usage.cachedInputTokens
    },
    metadata: { modelgate: { evidence: result.evidence } }
  }
}

/** The parts that end every answer, streamed or not: its tool calls, then `finish`. */
const closingParts = (
  result: ModelResult,
  method: string
): Either.Either<Array<Response.ToolCallPartEncoded | Response.FinishPartEncoded>, AiError.AiError> => {
  const parts: Array<Response.ToolCallPartEncoded | Response.FinishPartEncoded> = []
  for (const call of result.content.toolCalls) {
    const part = toolCallPart(call, method)
    if (Either.isLeft(part)) return Either.left(part.left)
    parts.push(part.right)
  }
  parts.push(finishPart(result))
  return Either.right(parts)
}

export const resultParts = (
  result: ModelResult,
  method: string
): Either.Either<Array<Response.PartEncoded>, AiError.AiError> => {
  const parts: Array<Response.PartEncoded> = [metadataPart(result)]
  const text = textOf(result)
  if (text !== undefined && text !== "") parts.push({ type: "text", text })
  return Either.map(closingParts(result, method), (closing) => [...parts, ...closing])
}

/** Stream parts of the gateway's stream events; text and tool-call ids are stable per stream. */
export const streamParts = (
  events: Stream.Stream<StreamEvent, GatewayError>,
  method: string
): Stream.Stream<Response.StreamPartEncoded, AiError.AiError> =>
  Stream.suspend(() => {
    const textId = "text-0"
    let textOpen = false
    const toolIds = new Map<number, string>()
    const onEvent = (event: StreamEvent): Either.Either<ReadonlyArray<Response.StreamPartEncoded>, AiError.AiError> => {
      switch (event._tag) {
        case "TextDelta": {
          if (event.text === "") return Either.right([])
          const delta: Response.StreamPartEncoded = { type: "text-delta", id: textId, delta: event.text }
          if (textOpen) return Either.right([delta])
          textOpen = true
          return Either.right([{ type: "text-start", id: textId }, delta])
        }
        case "ToolCallDelta": {
          const known = toolIds.get(event.index)
          if (known !== undefined)
            return Either.right(
              event.argumentsDelta === "" ? [] : [{ type: "tool-params-delta", id: known, delta: event.argumentsDelta }]
            )
          const id = event.id ?? `call_${event.index}`
          toolIds.set(event.index, id)
          return Either.right([
            { type: "tool-params-start", id, name: event.name ?? "" },
            ...(event.argumentsDelta === ""
              ? []
              : [{ type: "tool-params-delta" as const, id, delta: event.argumentsDelta }])
          ])
        }
        case "Final": {
          const result = event.result
          const parts: Array<Response.StreamPartEncoded> = [metadataPart(result)]
          if (textOpen) parts.push({ type: "text-end", id: textId })
          else {
            // No delta streamed (a degraded answer): the whole text at once.
            const text = textOf(result)
            if (text !== undefined && text !== "")
              parts.push(
                { type: "text-start", id: textId },
                { type: "text-delta", id: textId, delta: text },
                { type: "text-end", id: textId }
              )
          }
          for (const id of toolIds.values()) parts.push({ type: "tool-params-end", id })
          return Either.map(closingParts(result, method), (closing) => [...parts, ...closing])
        }
        default:
          // RouteSelected, RouteCommitted, PartialObject, UsageUpdate, UsageReported: the finish
          // part carries the outcome.
          return Either.right([])
      }
    }
    return events.pipe(
      Stream.mapError((error) => toAiError(error, method)),
      Stream.mapEffect((event) => onEvent(event)),
      Stream.flattenIterables
    )
  })
