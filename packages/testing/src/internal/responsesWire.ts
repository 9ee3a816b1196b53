/**
 * Renders mock behaviours into the OpenAI **Responses** wire format (`POST /v1/responses`):
 * the response object of a non-streamed answer, and the `event: <type>` SSE frames of a streamed
 * one (`response.created`, `response.output_item.added`, `response.output_text.delta`,
 * `response.refusal.delta`, `response.function_call_arguments.delta`, `response.output_item.done`,
 * `response.completed | incomplete`, and `error` after HTTP 200), per providers.md §4–§7.
 *
 * The response object carries every field the official schemas require (`object`, `created_at`,
 * `error`, `incomplete_details`, `instructions`, `tools`, `tool_choice`, `parallel_tool_calls`,
 * `metadata`, `temperature`, `top_p`), so SDKs that decode it strictly accept it.
 *
 * @internal
 */
import type { ErrorSpec, Success, UsageSpec } from "./mockScript.js"
import type { SseAnswer } from "./mockWire.js"
import { argumentsOf, errorObject, isObject, modelOf, pieces, textOf, usageOf } from "./mockWire.js"

/** Responses usage: `input_tokens` counts cached tokens too, `output_tokens` reasoning tokens too. */
const responsesUsage = (usage: UsageSpec) => ({
  input_tokens: usage.input,
  input_tokens_details: { cached_tokens: usage.cached ?? 0 },
  output_tokens: usage.output,
  output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
  total_tokens: usage.input + usage.output
})

const refusalOf = (success: Success): string | undefined =>
  success.refusal === undefined ? undefined : success.refusal === true ? "I can't help with that." : success.refusal

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

interface Item {
  readonly added: Record<string, unknown>
  readonly deltas: ReadonlyArray<Record<string, unknown>>
  readonly done: Record<string, unknown>
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
  const refusal = refusalOf(success)
  if (refusal !== undefined) {
    const itemId = `msg_${id}_0`
    items.push({
      added: messageItem(itemId, { type: "refusal", refusal: "" }, "in_progress"),
      deltas: pieces(refusal, size).map((delta) => ({
        type: "response.refusal.delta",
        item_id: itemId,
        content_index: 0,
        delta
      })),
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
        deltas: pieces(text, size).map((delta) => ({
          type: "response.output_text.delta",
          item_id: itemId,
          content_index: 0,
          delta,
          logprobs: []
        })),
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
      deltas: pieces(args, size).map((delta) => ({
        type: "response.function_call_arguments.delta",
        item_id: itemId,
        delta
      })),
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
    chunks.push(frame({ type: "response.output_item.added", output_index: index, item: item.added }))
    for (const delta of item.deltas) {
      chunks.push(frame({ type: String(delta.type), ...delta, output_index: index }))
    }
    chunks.push(frame({ type: "response.output_item.done", output_index: index, item: item.done }))
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
