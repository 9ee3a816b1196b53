/**
 * Hand-checked fast paths for the common chat request, each returning exactly what its Schema
 * decodes, or `undefined` for any other shape (the Schema then decides, with its error paths):
 * the body — `model`, text messages of the four roles, `stream` and a few sampling scalars — as
 * `ChatWire.ChatRequest` decodes it, and the command of such a body — text messages, an output cap,
 * those sampling scalars and streaming, no header limits — as `ModelCommand.decodeUnknown` decodes
 * `ChatWire.commandOf`'s fields. The tests hold both to their schemas over generated bodies.
 *
 * @internal
 */
import { ModelCommand, ModelOptions, type Tenancy, type Workflow } from "@modelgate/core"
import { Schema, type Types } from "effect"
import type { ChatRequest } from "./chatWire.js"

type Message = ChatRequest["messages"][number]

const isNumberOrNull = (v: unknown): v is number | null => v === null || typeof v === "number"
const isIntOrNull = (v: unknown): v is number | null => v === null || (typeof v === "number" && Number.isSafeInteger(v))
const isBooleanOrNull = (v: unknown): v is boolean | null => v === null || typeof v === "boolean"

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `{ role, content: string }` with no other field, as the schema decodes it; else `undefined`. */
const textMessage = (value: unknown): Message | undefined => {
  if (!isRecord(value)) return undefined
  let fields = 0
  for (const _ in value) fields++
  const { role, content } = value
  if (fields !== 2 || typeof content !== "string") return undefined
  switch (role) {
    case "system":
    case "developer":
      return { role, content }
    case "user":
      return { role, content }
    case "assistant":
      return { role, content }
    default:
      return undefined
  }
}

type Body = Types.Mutable<ChatRequest>
type ScalarField =
  | "stream"
  | "temperature"
  | "top_p"
  | "presence_penalty"
  | "frequency_penalty"
  | "max_tokens"
  | "max_completion_tokens"
  | "seed"
  | "user"

/** The schema's check of each scalar field the fast path copies (any other field leaves it). */
const scalarChecks: { readonly [K in ScalarField]: (value: unknown) => value is Body[K] } = {
  stream: isBooleanOrNull,
  temperature: isNumberOrNull,
  top_p: isNumberOrNull,
  presence_penalty: isNumberOrNull,
  frequency_penalty: isNumberOrNull,
  max_tokens: isIntOrNull,
  max_completion_tokens: isIntOrNull,
  seed: isIntOrNull,
  user: (value): value is string => typeof value === "string"
}

const isScalarField = (field: string): field is ScalarField => Object.hasOwn(scalarChecks, field)

/** Copies one scalar field after the schema's check; false when the value fails it. */
const copyScalar = <K extends ScalarField>(out: Body, field: K, value: unknown): boolean => {
  const check: (value: unknown) => value is Body[K] = scalarChecks[field]
  if (!check(value)) return false
  out[field] = value
  return true
}

/** The decoded body when it has the common shape, else `undefined`. */
export const chatRequest = (json: unknown): ChatRequest | undefined => {
  if (!isRecord(json)) return undefined
  const { model, messages } = json
  if (typeof model !== "string" || model.length < 1 || model.length > 200) return undefined
  if (!Array.isArray(messages) || messages.length === 0) return undefined
  const decoded: Array<Message> = []
  for (const m of messages) {
    const message = textMessage(m)
    if (message === undefined) return undefined
    decoded.push(message)
  }
  const out: Body = { model, messages: decoded }
  for (const field in json) {
    if (field === "model" || field === "messages") continue
    if (!isScalarField(field) || !copyScalar(out, field, json[field])) return undefined
  }
  return out
}

/** `ModelCommand`'s limits on the fields the command's fast path builds (see its module doc). */
const maxMessages = 10_000
const maxText = 2_000_000
const maxOutputTokens = 100_000_000

const streaming = new ModelCommand.RequestRequirements({ streaming: true })

/** A body message as a command message when it is text within the command's limit, else `undefined`. */
const commandMessage = (m: ChatRequest["messages"][number]): ModelCommand.Message | undefined => {
  const content = m.content
  if (typeof content !== "string" || content.length > maxText) return undefined
  switch (m.role) {
    case "system":
    case "developer":
      return { _tag: "system", content }
    case "user":
      return { _tag: "user", content }
    case "assistant":
      return m.tool_calls === undefined ? { _tag: "assistant", content } : undefined
    default:
      return undefined
  }
}

/** True when the body sets a field the command's fast path leaves to the Schema. */
const hasOtherFields = (body: ChatRequest): boolean =>
  body.tools !== undefined ||
  body.tool_choice !== undefined ||
  (body.stop ?? undefined) !== undefined ||
  (body.parallel_tool_calls ?? undefined) !== undefined ||
  (body.reasoning_effort ?? undefined) !== undefined

type Options = Types.Mutable<NonNullable<ModelCommand.ModelCommand["options"]>>

/** Core's own check of the sampling options (`ModelOptions.RequestOptions`: ranges and shapes). */
const isRequestOptions = Schema.is(ModelOptions.RequestOptions)

/**
 * The sampling options of a body (`undefined` when none is set), or `false` when one is outside
 * `ModelOptions.RequestOptions` (the Schema then names it).
 */
const optionsOf = (body: ChatRequest): Options | undefined | false => {
  const options: Options = {}
  const { temperature, top_p, seed, presence_penalty, frequency_penalty, user } = body
  if (temperature !== undefined && temperature !== null) options.temperature = temperature
  if (top_p !== undefined && top_p !== null) options.topP = top_p
  if (seed !== undefined && seed !== null) options.seed = seed
  if (presence_penalty !== undefined && presence_penalty !== null) options.presencePenalty = presence_penalty
  if (frequency_penalty !== undefined && frequency_penalty !== null) options.frequencyPenalty = frequency_penalty
  if (user !== undefined) options.userId = user
  if (Object.keys(options).length === 0) return undefined
  return isRequestOptions(options) ? options : false
}

/**
 * The command of a decoded body with no header limits — what `ModelCommand.decodeUnknown` gives
 * for `{ ...ChatWire.commandOf(body), workflow, tenant }` — when the body is text messages within
 * the command's limits with at most an output cap and `stream`; else `undefined`. The workflow and
 * tenant are decoded already (their types say so), so only the body's fields are checked here.
 */
export const command = (
  body: ChatRequest,
  workflow: Workflow.WorkflowName,
  tenant: Tenancy.TenantId
): ModelCommand.ModelCommand | undefined => {
  if (body.messages.length > maxMessages || hasOtherFields(body)) return undefined
  const head = body.messages[0]
  const first = head === undefined ? undefined : commandMessage(head)
  if (first === undefined) return undefined
  const messages: [ModelCommand.Message, ...Array<ModelCommand.Message>] = [first]
  for (let i = 1; i < body.messages.length; i++) {
    const m = body.messages[i]
    const message = m === undefined ? undefined : commandMessage(m)
    if (message === undefined) return undefined
    messages.push(message)
  }
  const fields: Types.Mutable<ConstructorParameters<typeof ModelCommand.ModelCommand>[0]> = {
    workflow,
    tenant,
    messages
  }
  const cap = body.max_completion_tokens ?? body.max_tokens ?? undefined
  if (cap !== undefined) {
    if (cap < 1 || cap > maxOutputTokens) return undefined
    fields.maxOutputTokens = cap
  }
  const options = optionsOf(body)
  if (options === false) return undefined
  if (options !== undefined) fields.options = options
  if (body.stream === true) fields.requires = streaming
  // Every field was checked above against the schema's limits (the tests compare with its decode).
  return new ModelCommand.ModelCommand(fields, true)
}
