import { assert, describe, it } from "@effect/vitest"
import type { ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Chunk, Effect, Stream } from "effect"
import { providerError } from "../src/internal/classify.js"
import type { StreamMachine } from "../src/internal/sse.js"
import { decode, findBareError } from "../src/internal/sse.js"

const bytes = (...parts: ReadonlyArray<string | Uint8Array>) =>
  Stream.fromIterable(parts.map((p) => (typeof p === "string" ? new TextEncoder().encode(p) : p)))

/** Echoes each event as a text delta `event:data`; at the end, reports the tail's bare error. */
const echo = (): StreamMachine => ({
  onEvent: (event) => [{ _tag: "TextDelta", text: `${event.event}:${event.data}` }],
  onEnd: (tail) => {
    const bare = findBareError(tail)
    return bare === undefined
      ? []
      : providerError({ kind: "server_error", processed: "maybe", detail: JSON.stringify(bare) })
  }
})

const run = (body: Stream.Stream<Uint8Array>, maxBytes = 1_000_000) =>
  decode(body, { provider: "test", maxBytes, meta: { httpStatus: 200, requestId: undefined }, machine: echo() }).pipe(
    Stream.runCollect,
    Effect.map((events) =>
      Chunk.toReadonlyArray(events).map((e: ProviderStreamEvent) => (e._tag === "TextDelta" ? e.text : e._tag))
    )
  )

describe("SSE decoding", () => {
  it.effect("frames split anywhere, CRLF delimiters, multi-byte characters split across chunks", () =>
    Effect.gen(function* () {
      const euro = new TextEncoder().encode("data: €\n\n")
      const events = yield* run(
        bytes(
          'data: {"a"',
          ":1}\r\n\r\nevent: ping\ndata: {}\n\n",
          euro.subarray(0, 7),
          euro.subarray(7),
          ": comment\n\n"
        )
      )
      assert.deepStrictEqual(events, ['message:{"a":1}', "ping:{}", "message:€"])
    })
  )

  it.effect("mixed line endings in one read, and a CRLF split across reads", () =>
    Effect.gen(function* () {
      const events = yield* run(bytes("data: a\r\n\r\ndata: b\n\ndata: c\r", "\n\r", "\ndata: d\n\n"))
      assert.deepStrictEqual(events, ["message:a", "message:b", "message:c", "message:d"])
    })
  )

  it.effect("a final event without its blank line is dispatched; a partial last line is dropped", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* run(bytes("data: 1\n\ndata: [DONE]\n")), ["message:1", "message:[DONE]"])
      assert.deepStrictEqual(yield* run(bytes('data: 1\n\ndata: {"trunc')), ["message:1"])
    })
  )

  it.effect("retry fields are ignored (no sleeping, no re-reading)", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* run(bytes("retry: 100000\n\ndata: 1\n\n")), ["message:1"])
    })
  )

  it.effect("finds a bare (pretty-printed) JSON error at the end of the body", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        run(bytes("data: 1\r\n\r\n", '{\n  "error": {\n    "code": 503,\n    "status": "UNAVAILABLE"\n  }\n}\n'))
      )
      assert.strictEqual(error.detail, '{"code":503,"status":"UNAVAILABLE"}')
      assert.isUndefined(findBareError('data: {"error": 1}\n\n'))
    })
  )

  it.effect("bounds the bytes read", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(run(bytes("data: 1\n\n", "data: 2\n\n", "data: 3\n\n"), 12))
      assert.strictEqual(error.kind, "invalid_output")
    })
  )
})
