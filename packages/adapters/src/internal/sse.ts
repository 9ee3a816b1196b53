/**
 * Server-sent events to neutral stream events. Bytes are parsed with `@effect/experimental`'s
 * `Sse.makeParser`; each provider supplies a {@link StreamMachine} that turns SSE events into
 * {@link ProviderStreamEvent}s and decides, at the end of the body, whether the stream was complete.
 *
 * The parser is used directly rather than through `Sse.makeChannel` because the channel honours
 * `retry:` fields by sleeping and re-reading, which a provider stream must never do.
 *
 * @internal
 */
import type { HttpClientError } from "@effect/platform"
import * as Sse from "@effect/experimental/Sse"
import type { ProviderError } from "@modelgate/core/Errors"
import type { ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Effect, Stream } from "effect"
import type { Meta } from "./classify.js"
import { field, isRecord, providerError } from "./classify.js"
import { parseJson, transportError } from "./http.js"

/**
 * What a machine answers for one SSE event, or at the end of the body: events to emit, or the
 * failure that ends the stream.
 *
 * @internal
 */
export type Step = ReadonlyArray<ProviderStreamEvent> | ProviderError

/** @internal */
export interface StreamMachine {
  readonly onEvent: (event: Sse.Event) => Step
  /** The body ended. `tail` is the last few KiB of raw text, to find a bare JSON error body. */
  readonly onEnd: (tail: string) => Step
}

const tailSize = 16 * 1024
const noEvents: ReadonlyArray<ProviderStreamEvent> = []

const isFailure = (step: Step): step is ProviderError => !Array.isArray(step)

/**
 * Decodes an SSE body with `machine`, bounded by `maxBytes`. A connection lost mid-body fails
 * with `transport` (`processed: "maybe"`).
 *
 * @internal
 */
export const decode = (
  body: Stream.Stream<Uint8Array, HttpClientError.ResponseError>,
  options: {
    readonly provider: string
    readonly maxBytes: number
    readonly meta: Meta
    readonly machine: StreamMachine
  }
): Stream.Stream<ProviderStreamEvent, ProviderError> =>
  Stream.suspend(() => {
    const { machine, maxBytes, meta, provider } = options
    const decoder = new TextDecoder()
    const pending: Array<Sse.Event> = []
    const parser = Sse.makeParser(
      (event) => {
        if (event._tag === "Event") pending.push(event)
      },
      { maxEventSize: maxBytes }
    )
    let bytes = 0
    let tail = ""
    let endsWithNewline = false
    // Once `Finish` is out, the rest of the body is read (so the connection can be reused) but a
    // failure there no longer matters: the answer is complete.
    let finished = false
    const tooLarge = () =>
      providerError({
        kind: "invalid_output",
        processed: "maybe",
        httpStatus: meta.httpStatus,
        requestId: meta.requestId,
        detail: `${provider}: stream exceeds ${maxBytes} bytes`
      })

    // A "\r" at the end of a read is held back, so that a "\r\n" split across reads stays one
    // line end.
    let carry = ""

    /**
     * Feeds the parser one line at a time. `Sse.makeParser` rescans its whole buffer from the start
     * for every line and remembers a stale "\r" from an earlier line, which swallows the blank
     * line of a later event when line endings are mixed within one read (and is quadratic in the
     * number of lines per read). With one line per `feed` its buffer never holds more than that.
     */
    const feedLines = (text: string): boolean => {
      let start = 0
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
        if (parser.feed(text.slice(start, nl + 1)) !== undefined) return false
        start = nl + 1
      }
      return start >= text.length || parser.feed(text.slice(start)) === undefined
    }

    const feed = (chunk: string, final = false): Step => {
      let text = carry + chunk
      carry = ""
      if (!final && text.endsWith("\r")) {
        carry = "\r"
        text = text.slice(0, -1)
      }
      if (text.length === 0) return noEvents
      tail = tail.length + text.length > tailSize ? (tail + text).slice(-tailSize) : tail + text
      const last = text[text.length - 1]
      endsWithNewline = last === "\n" || last === "\r"
      if (!feedLines(text)) return tooLarge()
      if (pending.length === 0) return noEvents
      const out: Array<ProviderStreamEvent> = []
      for (const event of pending.splice(0)) {
        const step = machine.onEvent(event)
        if (isFailure(step)) return step
        for (const e of step) {
          if (e._tag === "Finish") finished = true
          out.push(e)
        }
      }
      return out
    }

    const run = (step: Step) => (isFailure(step) ? Effect.fail(step) : Effect.succeed(step))

    const chunks = Stream.mapConcatEffect(
      Stream.mapError(body, (error) => transportError(provider, error, meta)),
      (chunk) => {
        if (finished) return Effect.succeed(noEvents)
        bytes += chunk.length
        if (bytes > maxBytes) return Effect.fail(tooLarge())
        return run(feed(decoder.decode(chunk, { stream: true })))
      }
    ).pipe(Stream.catchAll((error) => (finished ? Stream.empty : Stream.fail(error))))

    // At the end, a complete last line still dispatches its event (llama.cpp may omit the final
    // blank line after `data: [DONE]`); a partial line is a truncated event and is dropped.
    const end = Stream.suspend(() => {
      if (finished) return Stream.empty
      const rest = feed(decoder.decode(), true)
      if (isFailure(rest)) return Stream.fail(rest)
      const flushed = endsWithNewline ? feed("\n") : noEvents
      if (isFailure(flushed)) return Stream.fail(flushed)
      const final = machine.onEnd(tail)
      if (isFailure(final)) return Stream.fail(final)
      return Stream.fromIterable([...rest, ...flushed, ...final])
    })

    return Stream.concat(chunks, end)
  })

/**
 * Finds a bare JSON error object (`{"error": {...}}`, possibly pretty-printed) at the end of a
 * body, as Gemini sends mid-stream, or as a server that ignored `stream: true` answers.
 *
 * @internal
 */
export const findBareError = (tail: string): unknown => {
  const match = /(?:^|[\r\n])\s*(\{\s*"error"\s*:)/.exec(tail)
  if (match === null) return undefined
  const start = match.index + match[0].length - (match[1] ?? "").length
  const candidate = tail.slice(start).trim()
  const parsed = parseJson(candidate)
  if (parsed._tag === "Right" && isRecord(field(parsed.right, "error"))) return field(parsed.right, "error")
  return undefined
}
