/**
 * Renders mock behaviours into the OpenAI **Responses** wire format (`POST /v1/responses`):
 * the response object of a non-streamed answer, and the `event: <type>` SSE frames of a streamed
 * one in the API's order (`response.created`, `response.in_progress`, per item
 * `response.output_item.added`, per content part `response.content_part.added`, the
 * `response.output_text.delta | refusal.delta` frames, `response.output_text.done | refusal.done`,
 * `response.content_part.done`; per function call its `response.function_call_arguments.delta`
 * frames and `.done`; `response.output_item.done`; `response.completed | incomplete`, and `error`
 * after HTTP 200), per providers.md §4–§7.
 *
 * The response object carries every field the official schemas require (`object`, `created_at`,
 * `error`, `incomplete_details`, `instructions`, `tools`, `tool_choice`, `parallel_tool_calls`,
 * `metadata`, `temperature`, `top_p`), so SDKs that decode it strictly accept it.
 *
 * @internal
 */
import type { ErrorSpec, Success, UsageSpec } from "./mockScript.js"
import type { SseAnswer } from "./wire.js"
import { argumentsOf, errorObject, isObject, modelOf, pieces, refusalText, textOf, usageOf } from "./wire.js"

/** Responses usage: `input_tokens` counts cached tokens too, `output_tokens` reasoning tokens too. */
const responsesUsage = (usage: UsageSpec) => ({
  input_tokens: usage.input,
  input_tokens_details: { cached_tokens: usage.cached ?? 0 },
  output_tokens: usage.output,
  output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
  total_tokens: usage.input + usage.output
})

/**
 * `status` and `incomplete_details.reason` from the script's raw finish value: `max_output_tokens`
 * and `content_filter` make the response `incomplete`; anything else is `completed`.
 */
const statusOf = (success: Success): { readonly status: string; readonly reason: string | undefined } =>
  success.finishReason === "max_output_tokens" || success.finishReason === "content_filter"
    ? { status: "incomplete", reason: success.finishReason }
    : { status: "completed", reason: undefined }

/** The JSON Schema of a Responses structured-output request (`text.format`). @internal */
export const responsesRequestedSchema = (body: unknown): unknown => {
  if (!isObject(body) || !isObject(body.text) || !isObject(body.text.format)) return undefined
  return body.text.format.type === "json_schema" ? body.text.format.schema : undefined
}

/**
 * An output item: its `output_item.added` item and the frames that open its content, the delta
 * frames, the frames that close its content and its done item. Opening and closing frames travel
 * with the item frames (one cuttable chunk each), so a fault counts the same chunks as before.
 */
interface Item {
  readonly added: Record<string, unknown>
  readonly opening: ReadonlyArray<Record<string, unknown>>
  readonly deltas: ReadonlyArray<Record<string, unknown>>
  readonly closing: ReadonlyArray<Record<string, unknown>>
  readonly done: Record<string, unknown>
}

/**
 * The frames of one content part, as the API sends them: `content_part.added`, the deltas,
 * `<kind>.done` with the whole value, `content_part.done` (the official SDKs' `responses.stream()`
 * needs the part added before its deltas).
 */
const partFrames = (
  itemId: string,
  kind: "output_text" | "refusal",
  value: string,
  size: number
): Pick<Item, "opening" | "deltas" | "closing"> => {
  const key = kind === "output_text" ? "text" : "refusal"
  const part = (v: string) =>
    kind === "output_text" ? { type: kind, text: v, annotations: [] } : { type: kind, refusal: v }
  const at = { item_id: itemId, content_index: 0 }
  return {
    opening: [{ type: "response.content_part.added", ...at, part: part("") }],
    deltas: pieces(value, size).map((delta) => ({
      type: `response.${kind}.delta`,
      ...at,
      delta,
      ...(kind === "output_text" ? { logprobs: [] } : {})
    })),
    closing: [
      { type: `response.${kind}.done`, ...at, [key]: value, ...(kind === "output_text" ? { logprobs: [] } : {}) },
      { type: "response.content_part.done", ...at, part: part(value) }
    ]
  }
}

const messageItem = (id: string, content: Record<string, unknown>, status: string) => ({
  id,
  type: "message",
  role: "assistant",
  status,
  content: [content]
})

/** The output items of an answer, each with its streamed deltas. */
const itemsOf = (success: Success, id: string): Array<Item> => {
  const size = success.chunkSize ?? 16
  const items: Array<Item> = []
  const refusal = refusalText(success)
  if (refusal !== undefined) {
    const itemId = `msg_${id}_0`
    items.push({
      added: { ...messageItem(itemId, { type: "refusal", refusal: "" }, "in_progress"), content: [] },
      ...partFrames(itemId, "refusal", refusal, size),
      done: messageItem(itemId, { type: "refusal", refusal }, "completed")
    })
  } else {
    const text = textOf(success) ?? ""
    if (text !== "") {
      const itemId = `msg_${id}_0`
      items.push({
        added: {
          ...messageItem(itemId, { type: "output_text", text: "", annotations: [] }, "in_progress"),
          content: []
        },
        ...partFrames(itemId, "output_text", text, size),
        done: messageItem(itemId, { type: "output_text", text, annotations: [], logprobs: [] }, "completed")
      })
    }
  }
  for (const [i, call] of (success.toolCalls ?? []).entries()) {
    const itemId = `fc_${id}_${i}`
    const callId = call.id ?? `call_mock_${i}`
    const args = argumentsOf(call)
    items.push({
      added: {
        id: itemId,
        type: "function_call",
        call_id: callId,
        name: call.name,
        arguments: "",
        status: "in_progress"
      },
      opening: [],
      deltas: pieces(args, size).map((delta) => ({
        type: "response.function_call_arguments.delta",
        item_id: itemId,
        delta
      })),
      closing: [{ type: "response.function_call_arguments.done", item_id: itemId, arguments: args }],
      done: {
        id: itemId,
        type: "function_call",
        call_id: callId,
        name: call.name,
        arguments: args,
        status: "completed"
      }
    })
  }
  return items
}

const responseObject = (
  success: Success,
  requested: string | undefined,
  id: string,
  created: number,
  state: "in_progress" | "final",
  output: ReadonlyArray<unknown>
): Record<string, unknown> => {
  const usage = usageOf(success)
  const { status, reason } = statusOf(success)
  const final = state === "final"
  return {
    id,
    object: "response",
    created_at: created,
    status: final ? status : "in_progress",
    error: null,
    incomplete_details: final && reason !== undefined ? { reason } : null,
    instructions: null,
    max_output_tokens: null,
    model: modelOf("openai-responses", success, requested),
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    temperature: 1,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: 1,
    truncation: "disabled",
    usage: final && usage !== undefined ? responsesUsage(usage) : null,
    user: null,
    metadata: {}
  }
}

/** The body of a non-streamed Responses answer. @internal */
export const responsesBody = (success: Success, requested: string | undefined, id: string): string =>
  JSON.stringify(
    responseObject(
      success,
      requested,
      id,
      Math.floor(Date.now() / 1000),
      "final",
      itemsOf(success, id).map((item) => item.done)
    )
  )

/**
 * A streamed Responses answer. Each frame is `event: <type>` plus `data:` with the same `type` and
 * a `sequence_number`; the content frames (one per delta, the item frames around them) are the
 * ones faults can cut.
 *
 * @internal
 */
export const responsesSse = (success: Success, requested: string | undefined, id: string): SseAnswer => {
  const created = Math.floor(Date.now() / 1000)
  let sequence = 0
  const frame = (data: Record<string, unknown> & { readonly type: string }) =>
    `event: ${data.type}\ndata: ${JSON.stringify({ ...data, sequence_number: sequence++ })}\n\n`
  const preamble = [
    frame({ type: "response.created", response: responseObject(success, requested, id, created, "in_progress", []) }),
    frame({
      type: "response.in_progress",
      response: responseObject(success, requested, id, created, "in_progress", [])
    })
  ]
  const items = itemsOf(success, id)
  const chunks: Array<string> = []
  for (const [index, item] of items.entries()) {
    const inner = (data: Record<string, unknown>) => frame({ type: String(data.type), ...data, output_index: index })
    chunks.push(
      frame({ type: "response.output_item.added", output_index: index, item: item.added }) +
        item.opening.map(inner).join("")
    )
    for (const delta of item.deltas) chunks.push(inner(delta))
    chunks.push(
      item.closing.map(inner).join("") +
        frame({ type: "response.output_item.done", output_index: index, item: item.done })
    )
  }
  const { status } = statusOf(success)
  const tail = [
    frame({
      type: status === "incomplete" ? "response.incomplete" : "response.completed",
      response: responseObject(
        success,
        requested,
        id,
        created,
        "final",
        items.map((item) => item.done)
      )
    })
  ]
  return { preamble, chunks, tail }
}

/**
 * An error after HTTP 200: the `error` event (`{type, code, message, param}`), as the Responses
 * API streams it.
 *
 * @internal
 */
export const responsesErrorFrames = (spec: ErrorSpec, code: number): Array<string> => {
  const error = errorObject("openai", code, spec)
  const data = { type: "error", code: error.code ?? null, message: error.message, param: null, sequence_number: 0 }
  return [`event: error\ndata: ${JSON.stringify(data)}\n\n`]
}
