/**
 * A hand-checked fast path for the common chat body — `model`, text messages of the four roles,
 * `stream` and a few sampling scalars — returning exactly what `ChatWire.ChatRequest` decodes, or
 * `undefined` for any other shape (the Schema then decides, with its error paths). The tests hold
 * it to the schema over generated bodies.
 *
 * @internal
 */
import type { Types } from "effect"
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

/** Copies one scalar field after the schema's check; false for any field the fast path leaves. */
const copyScalar = (out: Types.Mutable<ChatRequest>, field: string, value: unknown): boolean => {
  switch (field) {
    case "stream":
      if (!isBooleanOrNull(value)) return false
      out.stream = value
      return true
    case "temperature":
      if (!isNumberOrNull(value)) return false
      out.temperature = value
      return true
    case "top_p":
      if (!isNumberOrNull(value)) return false
      out.top_p = value
      return true
    case "presence_penalty":
      if (!isNumberOrNull(value)) return false
      out.presence_penalty = value
      return true
    case "frequency_penalty":
      if (!isNumberOrNull(value)) return false
      out.frequency_penalty = value
      return true
    case "max_tokens":
      if (!isIntOrNull(value)) return false
      out.max_tokens = value
      return true
    case "max_completion_tokens":
      if (!isIntOrNull(value)) return false
      out.max_completion_tokens = value
      return true
    case "seed":
      if (!isIntOrNull(value)) return false
      out.seed = value
      return true
    case "user":
      if (typeof value !== "string") return false
      out.user = value
      return true
    default:
      return false
  }
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
  const out: Types.Mutable<ChatRequest> = { model, messages: decoded }
  for (const field in json)
    if (field !== "model" && field !== "messages" && !copyScalar(out, field, json[field])) return undefined
  return out
}
