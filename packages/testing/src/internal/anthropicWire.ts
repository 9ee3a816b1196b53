/**
 * The mock's Anthropic **Messages** wire format: the message object and its `event:` stream
 * (`message_start`, content blocks, `message_delta`, `message_stop`), per providers.md §5–§6.
 *
 * @internal
 */
import type { Success, UsageSpec } from "./mockScript.js"
import type { SseAnswer } from "./wire.js"
import { inputOf, modelOf, pieces, refusalText, sse, textOf, usageOf } from "./wire.js"

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
