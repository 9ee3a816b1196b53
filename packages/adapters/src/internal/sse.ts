/**
 * Server-sent events to neutral stream events. The body is split into lines at the byte level (a
 * line end is never inside a UTF-8 sequence), each complete line decoded once; each provider
 * supplies a {@link StreamMachine} that turns SSE events into {@link ProviderStreamEvent}s and
 * decides, at the end of the body, whether the stream was complete.
 *
 * Work is linear in the body: every byte is scanned once, a line split across reads is kept as
 * its pieces and joined once, and an event larger than `maxEventBytes` fails as soon as its bytes
 * are read, before it is decoded or parsed. `retry:` fields are ignored (a provider stream is never
 * re-read), as are `id:` fields.
 *
 * @internal
 */
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Cause, Channel, Chunk, Either, Stream } from "effect"
import type { Meta } from "./classify.js"
import { field, isRecord, providerError } from "./classify.js"
import { concatBytes, parseJson } from "./http.js"

/** Default bound of one SSE event (its field lines, in bytes): 1 MiB. @internal */
export const defaultMaxEventBytes = 1024 * 1024

/** One dispatched SSE event. @internal */
export interface SseEvent {
  /** The `event:` field, `"message"` when absent. */
  readonly event: string
  /** The `data:` lines joined with `\n`. */
  readonly data: string
}

/**
 * What a machine answers for one SSE event, or at the end of the body: events to emit, or the
 * failure that ends the stream.
 *
 * @internal
 */
export type Step = ReadonlyArray<ProviderStreamEvent> | ProviderError

/** @internal */
export interface StreamMachine {
  readonly onEvent: (event: SseEvent) => Step
  /** The body ended. `tail` is the last few KiB of raw text, to find a bare JSON error body. */
  readonly onEnd: (tail: string) => Step
}

const tailSize = 16 * 1024
const LF = 10
const CR = 13
const COLON = 58
const SPACE = 32
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true })

/** Reads of the body in, neutral events out. */
type Decoder = Channel.Channel<
  Chunk.Chunk<ProviderStreamEvent>,
  Chunk.Chunk<Uint8Array>,
  ProviderError,
  ProviderError,
  unknown,
  unknown
>

const isFailure = (step: Step): step is ProviderError => !Array.isArray(step)

/**
 * Decodes an SSE body with `machine`. The body is bounded by `maxBytes` and each event by
 * `maxEventBytes` (both `invalid_output`, `processed: "maybe"`); a connection lost mid-body fails
 * with the transport's error (`transport`, `processed: "maybe"`). Events decoded before a failure, in the same read
 * included, are emitted before it.
 *
 * @internal
 */
// long: one stream's decoder: the line and event buffers and byte counts its read steps share
export const decode = (
  body: Stream.Stream<Uint8Array, ProviderError>,
  options: {
    readonly provider: string
    readonly maxBytes: number
    readonly maxEventBytes: number
    readonly meta: Meta
    readonly machine: StreamMachine
  }
): Stream.Stream<ProviderStreamEvent, ProviderError> =>
  Stream.suspend(() => {
    const { machine, maxBytes, maxEventBytes, meta, provider } = options

    // The line being read: its pieces so far (a line may span many reads).
    let parts: Array<Uint8Array> = []
    let partSize = 0
    // The last read ended with "\r": a "\n" starting the next one belongs to that line end.
    let skipLf = false
    let atStart = true
    // The event being read.
    let eventSize = 0
    let data: string | undefined
    let eventName: string | undefined
    // The body.
    let bytes = 0
    let tailParts: Array<Uint8Array> = []
    let tailHead = 0
    let tailBytes = 0
    // Once `Finish` is out, the rest of the body is read (so the connection can be reused) but not
    // parsed, and a failure there no longer matters: the answer is complete.
    let finished = false
    let failure: ProviderError | undefined

    const tooLarge = (what: string, limit: number) =>
      providerError({
        kind: "invalid_output",
        processed: "maybe",
        httpStatus: meta.httpStatus,
        requestId: meta.requestId,
        detail: `${provider}: ${what} exceeds ${limit} bytes`
      })

    const keepTail = (chunk: Uint8Array) => {
      tailParts.push(chunk)
      tailBytes += chunk.length
      for (let head = tailParts[tailHead]; head !== undefined && tailBytes - head.length >= tailSize; ) {
        tailBytes -= head.length
        head = tailParts[++tailHead]
      }
      if (tailHead > 64 && tailHead * 2 > tailParts.length) {
        tailParts = tailParts.slice(tailHead)
        tailHead = 0
      }
    }

    const tailText = () => {
      const kept = concatBytes(tailParts.slice(tailHead), tailBytes)
      return utf8.decode(kept.length > tailSize ? kept.subarray(kept.length - tailSize) : kept)
    }

    /** Hands the event read so far to the machine. `false` when it failed. */
    const dispatch = (out: Array<ProviderStreamEvent>): boolean => {
      const value = data
      const name = eventName
      data = undefined
      eventName = undefined
      eventSize = 0
      if (value === undefined) return true
      const step = machine.onEvent({ event: name === undefined || name === "" ? "message" : name, data: value })
      if (isFailure(step)) {
        failure = step
        return false
      }
      for (const event of step) {
        if (event._tag === "Finish") finished = true
        out.push(event)
      }
      return true
    }

    /** One complete line (without its end). `false` when the stream failed. */
    const line = (raw: Uint8Array, out: Array<ProviderStreamEvent>): boolean => {
      if (raw.length === 0) return dispatch(out)
      if (raw[0] === COLON) return true
      const text = utf8.decode(raw)
      const colon = text.indexOf(":")
      const name = colon < 0 ? text : text.slice(0, colon)
      if (name !== "data" && name !== "event") return true
      const value = colon < 0 ? "" : text.slice(text.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1)
      if (name === "event") eventName = value
      else data = data === undefined ? value : `${data}\n${value}`
      return true
    }

    /** One read of the body. `false` when the stream failed. */
    const feed = (chunk: Uint8Array, out: Array<ProviderStreamEvent>): boolean => {
      const n = chunk.length
      let i = 0
      if (skipLf) {
        skipLf = false
        if (n > 0 && chunk[0] === LF) i = 1
      }
      if (atStart && n > 0) {
        atStart = false
        if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) i = 3
      }
      let lf = chunk.indexOf(LF, i)
      let cr = chunk.indexOf(CR, i)
      while (i < n) {
        if (lf !== -1 && lf < i) lf = chunk.indexOf(LF, i)
        if (cr !== -1 && cr < i) cr = chunk.indexOf(CR, i)
        const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr)
        const size = partSize + (end === -1 ? n : end) - i
        // Every line of an event counts, checked before anything is decoded.
        if (eventSize + size > maxEventBytes) {
          failure = tooLarge("stream event", maxEventBytes)
          return false
        }
        if (end === -1) {
          parts.push(chunk.subarray(i))
          partSize = size
          return true
        }
        const raw = partSize === 0 ? chunk.subarray(i, end) : concatBytes([...parts, chunk.subarray(i, end)], size)
        parts = []
        partSize = 0
        eventSize += size
        i = end + 1
        if (end === cr) {
          if (i < n) {
            if (chunk[i] === LF) i++
          } else {
            skipLf = true
          }
        }
        if (!line(raw, out)) return false
        if (finished) return true
      }
      return true
    }

    /** The end of the body: a complete last line still dispatches its event (llama.cpp may omit the
     * final blank line after `data: [DONE]`); a partial line is a truncated event and is dropped. */
    // The body ended inside a line: a last line that is whole (`data: [DONE]` or a JSON value without
    // its line end, as some servers send it) still counts; a cut one is left to `onEnd`.
    const flushLastLine = (out: Array<ProviderStreamEvent>): boolean => {
      const raw = concatBytes(parts, partSize)
      parts = []
      partSize = 0
      if (!line(raw, out) || data === undefined) return true
      const last = data.slice(data.lastIndexOf("\n") + 1)
      if (last === "[DONE]" || Either.isRight(parseJson(last))) return dispatch(out)
      data = undefined
      eventName = undefined
      return true
    }

    const end = (out: Array<ProviderStreamEvent>): void => {
      if (partSize > 0 && !flushLastLine(out)) return
      if (!dispatch(out)) return
      if (finished) return
      const final = machine.onEnd(tailText())
      if (isFailure(final)) failure = final
      else out.push(...final)
    }

    /** Writes `out`, then fails with the failure met, if any, or goes on with `next`. */
    const emit = (out: Array<ProviderStreamEvent>, next: Decoder): Decoder => {
      const then = failure === undefined ? next : Channel.fail(failure)
      return out.length === 0 ? then : Channel.zipRight(Channel.write(Chunk.unsafeFromArray(out)), then)
    }

    const loop: Decoder = Channel.readWithCause({
      onInput: (reads: Chunk.Chunk<Uint8Array>) => {
        if (finished) return loop
        const out: Array<ProviderStreamEvent> = []
        for (const chunk of reads) {
          bytes += chunk.length
          if (bytes > maxBytes) {
            failure = tooLarge("stream", maxBytes)
            break
          }
          keepTail(chunk)
          if (!feed(chunk, out) || finished) break
        }
        return emit(out, loop)
      },
      onFailure: (cause) => (finished && Cause.isFailType(cause) ? Channel.void : Channel.failCause(cause)),
      onDone: () => {
        if (finished) return Channel.void
        const out: Array<ProviderStreamEvent> = []
        end(out)
        return emit(out, Channel.void)
      }
    })

    return Stream.pipeThroughChannel(body, loop)
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
