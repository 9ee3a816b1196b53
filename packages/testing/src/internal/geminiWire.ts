/**
 * The mock's Gemini **generateContent** wire format: the response object and its `alt=sse` chunk
 * stream (frames end with `\r\n\r\n`), per providers.md §5–§6.
 *
 * @internal
 */
import type { Success, UsageSpec } from "./mockScript.js"
import type { SseAnswer } from "./wire.js"
import { inputOf, modelOf, pieces, textOf, usageOf } from "./wire.js"

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
