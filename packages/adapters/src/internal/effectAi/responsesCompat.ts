/**
 * An `HttpClient` middleware that lets `@effect/ai-openai` (0.41) read what the OpenAI Responses API
 * really sends. Its generated schemas are stricter than the wire, and its stream decoder skips any
 * event they reject, so without this:
 *
 * - an error event with a nested error object (`{"type":"error","error":{"code":…}}`) and a
 *   `response.failed` whose code is not in its enumeration (e.g. `insufficient_quota`) vanish, and
 *   a quota exhaustion comes back as a retryable truncated stream;
 * - a response object without one of the fields it requires (`error`, `instructions`, `metadata`,
 *   …; newer API versions leave some out) makes the whole answer unreadable.
 *
 * Error events become the flat `{"type":"error","code","message","param"}` shape (a failed
 * response's error too), and missing response fields get their documented empty value. Other
 * bodies and events pass unchanged.
 *
 * @internal
 */
import type { HttpClientError } from "@effect/platform"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { isRecord, stringField } from "../classify.js"

/** The empty value of each response field the generated schema requires. */
const responseDefaults: ReadonlyArray<readonly [string, unknown]> = [
  ["error", null],
  ["incomplete_details", null],
  ["instructions", null],
  ["metadata", null],
  ["temperature", null],
  ["top_p", null],
  ["tools", []],
  ["tool_choice", "auto"],
  ["parallel_tool_calls", true],
  ["output", []]
]

const withDefaults = (response: Record<string, unknown>): Record<string, unknown> => {
  const out = { ...response }
  for (const [key, value] of responseDefaults) if (!(key in out)) out[key] = value
  return out
}

const flatError = (sequence: unknown, error: Record<string, unknown>) => ({
  type: "error",
  sequence_number: typeof sequence === "number" ? sequence : 0,
  code: stringField(error, "code") ?? stringField(error, "type") ?? null,
  message: stringField(error, "message") ?? "",
  param: stringField(error, "param") ?? null
})

/**
 * One Responses stream event, or a response body, in the shape the generated schema reads.
 *
 * @internal
 */
export const normalizeEvent = (event: unknown): unknown => {
  if (!isRecord(event)) return event
  if (event.type === "error") return isRecord(event.error) ? flatError(event.sequence_number, event.error) : event
  if (event.type === "response.failed" && isRecord(event.response) && isRecord(event.response.error)) {
    return flatError(event.sequence_number, event.response.error)
  }
  if (isRecord(event.response)) return { ...event, response: withDefaults(event.response) }
  if (event.object === "response") return withDefaults(event)
  return event
}

const normalizeJson = (text: string): string => {
  try {
    return JSON.stringify(normalizeEvent(JSON.parse(text)))
  } catch {
    return text
  }
}

const normalizeLine = (line: string): string =>
  line.startsWith("data:") ? `data: ${normalizeJson(line.slice(line.startsWith("data: ") ? 6 : 5))}` : line

const rewrite = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.ResponseError> => {
  const contentType = response.headers["content-type"] ?? ""
  const init = { status: response.status, headers: Object.entries(response.headers) }
  if (contentType.includes("text/event-stream")) {
    const body: Stream.Stream<Uint8Array, HttpClientError.ResponseError> = response.stream.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.map((line) => `${normalizeLine(line)}\n`),
      Stream.encodeText
    )
    return Effect.succeed(
      HttpClientResponse.fromWeb(response.request, new Response(Stream.toReadableStream(body), init))
    )
  }
  if (contentType.includes("application/json") && response.status >= 200 && response.status < 300) {
    return Effect.map(response.text, (text) =>
      HttpClientResponse.fromWeb(response.request, new Response(normalizeJson(text), init))
    )
  }
  return Effect.succeed(response)
}

/**
 * `client` with the Responses wire normalized for `@effect/ai-openai` (module documentation).
 *
 * @internal
 */
export const responsesCompat = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(client, Effect.flatMap(rewrite))
