/**
 * `POST /v1/responses` (OpenAI Responses): `input` and `instructions` as messages, function tools,
 * `text.format` checked against the workflow (whose schema stays authoritative); streamed as the
 * `event:` frames the official SDK's `responses.stream()` accumulates, in its order:
 * `response.created`, `response.in_progress`, per item `output_item.added` (a message's
 * `content_part.added`, `output_text.delta`…, `output_text.done`, `content_part.done`; a function
 * call's `function_call_arguments.delta`…, `.done`), `output_item.done`, then `response.completed`
 * (with a `modelgate` evidence field).
 *
 * @internal
 */
import { HttpServerResponse } from "@effect/platform"
import { ModelCommand, type ModelResult, type StreamEvent, Tenancy } from "@modelgate/core"
import { Effect, Schema, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { pullUntilContent, rest } from "./chat.js"
import { contentText, optionsOf, put } from "./chatWire.js"
import * as ErrorWire from "./errorWire.js"
import { evidenceHeaders, evidenceSummary } from "./evidenceWire.js"
import * as Request from "./request.js"

const InputPart = Schema.Union(
  Schema.Struct({ type: Schema.Literal("input_text", "output_text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("input_image"), image_url: Schema.String })
)
const InputItem = Schema.Union(
  Schema.Struct({
    type: Schema.optional(Schema.Literal("message")),
    role: Schema.Literal("user", "system", "developer", "assistant"),
    content: Schema.Union(Schema.String, Schema.Array(InputPart))
  }),
  Schema.Struct({
    type: Schema.Literal("function_call"),
    call_id: Schema.String,
    name: Schema.String,
    arguments: Schema.String
  }),
  Schema.Struct({ type: Schema.Literal("function_call_output"), call_id: Schema.String, output: Schema.String })
)
type InputItem = typeof InputItem.Type

const ResponsesTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String,
  description: Schema.optional(Schema.NullOr(Schema.String)),
  parameters: Schema.optional(Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
  strict: Schema.optional(Schema.NullOr(Schema.Boolean))
})

const ResponsesRequest = Schema.Struct({
  model: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  input: Schema.Union(Schema.String, Schema.Array(InputItem).pipe(Schema.minItems(1))),
  instructions: Schema.optional(Schema.NullOr(Schema.String)),
  tools: Schema.optional(Schema.Array(ResponsesTool)),
  tool_choice: Schema.optional(
    Schema.Union(
      Schema.Literal("auto", "none", "required"),
      Schema.Struct({ type: Schema.Literal("function"), name: Schema.String })
    )
  ),
  text: Schema.optional(
    Schema.Struct({
      format: Schema.optional(Schema.Struct({ type: Schema.Literal("text", "json_object", "json_schema") }))
    })
  ),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  temperature: Schema.optional(Schema.NullOr(Schema.Number)),
  top_p: Schema.optional(Schema.NullOr(Schema.Number)),
  max_output_tokens: Schema.optional(Schema.NullOr(Schema.Int)),
  parallel_tool_calls: Schema.optional(Schema.NullOr(Schema.Boolean)),
  reasoning: Schema.optional(Schema.NullOr(Schema.Struct({ effort: Schema.optional(Schema.NullOr(Schema.String)) }))),
  previous_response_id: Schema.optional(Schema.NullOr(Schema.String)),
  user: Schema.optional(Schema.String)
})
type ResponsesRequest = typeof ResponsesRequest.Type

const partsText = (content: string | ReadonlyArray<typeof InputPart.Type>): string =>
  typeof content === "string" ? content : content.map((p) => ("text" in p ? p.text : "")).join("")

const messagesOf = (body: ResponsesRequest): Array<Record<string, unknown>> => {
  const out: Array<Record<string, unknown>> = []
  if (body.instructions !== undefined && body.instructions !== null)
    out.push({ _tag: "system", content: body.instructions })
  const items: ReadonlyArray<InputItem> =
    typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input
  const names = new Map<string, string>()
  for (const item of items) {
    if (item.type === "function_call") {
      names.set(item.call_id, item.name)
      out.push({ _tag: "assistant", toolCalls: [{ id: item.call_id, name: item.name, arguments: item.arguments }] })
    } else if (item.type === "function_call_output") {
      out.push({
        _tag: "tool",
        toolCallId: item.call_id,
        name: (names.get(item.call_id) ?? "tool").slice(0, 64),
        content: item.output
      })
    } else if (item.role === "system" || item.role === "developer") {
      out.push({ _tag: "system", content: partsText(item.content) })
    } else if (item.role === "assistant") {
      out.push({ _tag: "assistant", content: partsText(item.content) })
    } else {
      out.push({
        _tag: "user",
        content:
          typeof item.content === "string"
            ? item.content
            : item.content.map((p) =>
                "text" in p ? { _tag: "text", text: p.text } : { _tag: "image", url: p.image_url }
              )
      })
    }
  }
  return out
}

const commandOf = (body: ResponsesRequest): Record<string, unknown> => {
  const fields: Record<string, unknown> = { messages: messagesOf(body) }
  put(
    fields,
    "tools",
    body.tools?.map((t) => ({
      name: t.name,
      description: t.description ?? "",
      parameters: t.parameters ?? { type: "object", properties: {} }
    }))
  )
  if (body.tool_choice !== undefined)
    fields.toolChoice = typeof body.tool_choice === "string" ? body.tool_choice : { tool: body.tool_choice.name }
  put(fields, "maxOutputTokens", body.max_output_tokens)
  put(fields, "options", optionsOf({ ...body, reasoning_effort: body.reasoning?.effort }))
  if (body.stream === true) fields.requires = { streaming: true }
  return fields
}

const usageOf = (usage: ModelResult.Usage) => ({
  input_tokens: usage.inputTokens,
  input_tokens_details: { cached_tokens: usage.cachedInputTokens },
  output_tokens: usage.outputTokens,
  output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  total_tokens: usage.inputTokens + usage.outputTokens
})

const messageItem = (id: string, text: string, status: string) => ({
  id,
  type: "message",
  role: "assistant",
  status,
  content: status === "in_progress" ? [] : [{ type: "output_text", text, annotations: [], logprobs: [] }]
})

const callItem = (id: string, callId: string, name: string, args: string, status: string) => ({
  id,
  type: "function_call",
  status,
  call_id: callId,
  name,
  arguments: args
})

interface Shell {
  readonly id: string
  readonly model: string
  readonly created: number
  readonly body: ResponsesRequest
}

const responseObject = (
  shell: Shell,
  status: string,
  output: ReadonlyArray<unknown>,
  result?: ModelResult.ModelResult
) => ({
  id: shell.id,
  object: "response",
  created_at: shell.created,
  status,
  error: null,
  incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
  instructions: shell.body.instructions ?? null,
  model: shell.model,
  output,
  parallel_tool_calls: shell.body.parallel_tool_calls ?? true,
  tool_choice: shell.body.tool_choice ?? "auto",
  tools: shell.body.tools ?? [],
  temperature: shell.body.temperature ?? null,
  top_p: shell.body.top_p ?? null,
  metadata: {},
  text: { format: { type: shell.body.text?.format?.type ?? "text" } },
  usage: result === undefined ? null : usageOf(result.evidence.usage),
  ...(result === undefined ? {} : { modelgate: evidenceSummary(result.evidence) })
})

const statusOf = (result: ModelResult.ModelResult) => (result.finishReason === "length" ? "incomplete" : "completed")

/** The output items of a finished result. */
const outputOf = (result: ModelResult.ModelResult): Array<unknown> => {
  const items: Array<unknown> = []
  const text = contentText(result)
  if (text !== null && text !== "") items.push(messageItem(`msg_${randomUUID()}`, text, "completed"))
  result.content.toolCalls.forEach((c, i) => {
    items.push(callItem(`fc_${i}_${randomUUID()}`, c.id, c.name, c.arguments, "completed"))
  })
  return items
}

/** The streamed frames of a response: a small state machine over the open output item. */
const makeFramer = (shell: Shell) => {
  let sequence = 0
  const output: Array<Record<string, unknown>> = []
  let open:
    | { kind: "message"; id: string; text: string }
    | { kind: "call"; index: number; id: string; callId: string; name: string; args: string }
    | undefined
  const frame = (data: Record<string, unknown> & { readonly type: string }) =>
    `event: ${data.type}\ndata: ${JSON.stringify({ ...data, sequence_number: sequence++ })}\n\n`
  const close = (): Array<string> => {
    if (open === undefined) return []
    const at = output.length
    const frames: Array<string> = []
    if (open.kind === "message") {
      const part = { type: "output_text", text: open.text, annotations: [], logprobs: [] }
      const item = messageItem(open.id, open.text, "completed")
      frames.push(
        frame({
          type: "response.output_text.done",
          item_id: open.id,
          output_index: at,
          content_index: 0,
          text: open.text,
          logprobs: []
        })
      )
      frames.push(
        frame({ type: "response.content_part.done", item_id: open.id, output_index: at, content_index: 0, part })
      )
      frames.push(frame({ type: "response.output_item.done", output_index: at, item }))
      output.push(item)
    } else {
      const item = callItem(open.id, open.callId, open.name, open.args, "completed")
      frames.push(
        frame({
          type: "response.function_call_arguments.done",
          item_id: open.id,
          output_index: at,
          arguments: open.args
        })
      )
      frames.push(frame({ type: "response.output_item.done", output_index: at, item }))
      output.push(item)
    }
    open = undefined
    return frames
  }
  const text = (delta: string): Array<string> => {
    const frames: Array<string> = []
    if (open?.kind !== "message") {
      frames.push(...close())
      const id = `msg_${randomUUID()}`
      open = { kind: "message", id, text: "" }
      frames.push(
        frame({
          type: "response.output_item.added",
          output_index: output.length,
          item: messageItem(id, "", "in_progress")
        })
      )
      frames.push(
        frame({
          type: "response.content_part.added",
          item_id: id,
          output_index: output.length,
          content_index: 0,
          part: { type: "output_text", text: "", annotations: [], logprobs: [] }
        })
      )
    }
    open.text += delta
    frames.push(
      frame({
        type: "response.output_text.delta",
        item_id: open.id,
        output_index: output.length,
        content_index: 0,
        delta,
        logprobs: []
      })
    )
    return frames
  }
  const call = (event: StreamEvent.ToolCallDelta): Array<string> => {
    const frames: Array<string> = []
    if (open?.kind !== "call" || open.index !== event.index) {
      frames.push(...close())
      const id = `fc_${randomUUID()}`
      open = { kind: "call", index: event.index, id, callId: event.id ?? id, name: event.name ?? "", args: "" }
      frames.push(
        frame({
          type: "response.output_item.added",
          output_index: output.length,
          item: callItem(id, open.callId, open.name, "", "in_progress")
        })
      )
    }
    open.args += event.argumentsDelta
    if (event.argumentsDelta !== "")
      frames.push(
        frame({
          type: "response.function_call_arguments.delta",
          item_id: open.id,
          output_index: output.length,
          delta: event.argumentsDelta
        })
      )
    return frames
  }
  return {
    start: (): Array<string> => [
      frame({ type: "response.created", response: responseObject(shell, "in_progress", []) }),
      frame({ type: "response.in_progress", response: responseObject(shell, "in_progress", []) })
    ],
    event: (event: StreamEvent.StreamEvent): Array<string> => {
      switch (event._tag) {
        case "TextDelta":
          return text(event.text)
        case "ToolCallDelta":
          return call(event)
        case "Final": {
          const result = event.result
          const frames: Array<string> = []
          const answer = contentText(result)
          if (output.length === 0 && open === undefined && answer !== null && answer !== "")
            frames.push(...text(answer))
          frames.push(...close())
          const status = statusOf(result)
          frames.push(
            frame({
              type: status === "incomplete" ? "response.incomplete" : "response.completed",
              response: responseObject(shell, status, output, result)
            })
          )
          return frames
        }
        default:
          return []
      }
    },
    error: (error: ErrorWire.WireError): string =>
      frame({ type: "error", code: error.code, message: error.message, param: null })
  }
}

const encoder = new TextEncoder()

const readBody = Request.bodyOf(ResponsesRequest)

export const handler = (env: Request.Env) =>
  Request.answer(
    Effect.gen(function* () {
      const { key, body, workflow } = yield* Request.intake(env, readBody, "chat")
      if (body.previous_response_id !== undefined && body.previous_response_id !== null)
        return yield* Request.fail(
          ErrorWire.invalidBody(["$.previous_response_id: not supported (the server keeps no state; send the input)"])
        )
      const format = body.text?.format?.type
      if (format !== undefined && format !== "text" && !workflow.structured)
        return yield* Request.fail(
          ErrorWire.invalidBody(["$.text.format: the workflow does not produce structured output"])
        )
      const limits = yield* Request.headerLimits
      const command = yield* ModelCommand.decodeUnknown({
        ...commandOf(body),
        ...limits,
        workflow: workflow.name,
        tenant: key.tenant
      }).pipe(Effect.mapError(Request.invalidCommand))
      const settle = yield* Request.takeRate(env, key)
      const shell: Shell = {
        id: `resp_${randomUUID().replaceAll("-", "")}`,
        model: body.model,
        created: env.createdAt(),
        body
      }
      if (body.stream !== true) {
        const result = yield* env.gateway.generate(command).pipe(
          Tenancy.vouch(Request.identityOf(key)),
          Effect.interruptible,
          Effect.mapError((e) => new Request.WireFailure({ error: ErrorWire.fromGatewayError(e) }))
        )
        settle(result.evidence.usage.inputTokens + result.evidence.usage.outputTokens)
        return HttpServerResponse.unsafeJson(responseObject(shell, statusOf(result), outputOf(result), result), {
          headers: evidenceHeaders(result.evidence)
        })
      }
      const pull = yield* Stream.toPull(
        Stream.provideService(env.gateway.stream(command), Tenancy.CurrentIdentity, Request.identityOf(key))
      )
      const head = yield* pullUntilContent(pull)
      const framer = makeFramer(shell)
      const frames = Stream.concat(
        Stream.fromIterable(framer.start()),
        rest(head.buffered, pull).pipe(
          Stream.tap((event) =>
            event._tag === "Final"
              ? Effect.sync(() =>
                  settle(event.result.evidence.usage.inputTokens + event.result.evidence.usage.outputTokens)
                )
              : Effect.void
          ),
          Stream.mapConcat(framer.event),
          Stream.catchAll((error) => Stream.make(framer.error(ErrorWire.fromGatewayError(error))))
        )
      ).pipe(Stream.map((text) => encoder.encode(text)))
      const headers: Record<string, string> = { "cache-control": "no-cache", "x-accel-buffering": "no" }
      if (head.route !== undefined) headers["x-modelgate-route"] = head.route
      return HttpServerResponse.stream(frames, { contentType: "text/event-stream", headers })
    })
  )
