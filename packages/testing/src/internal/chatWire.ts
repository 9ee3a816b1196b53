/**
 * The mock's OpenAI **Chat Completions** wire format (and the OpenAI-compatible servers'): the
 * completion object and its `data:` chunk stream ending in `data: [DONE]`, per providers.md §5–§6.
 *
 * @internal
 */
import type { Provider, Success, UsageSpec } from "./mockScript.js"
import type { SseAnswer } from "./wire.js"
import { argumentsOf, modelOf, pieces, refusalText, sse, textOf, usageOf } from "./wire.js"

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
