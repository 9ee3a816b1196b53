/**
 * Usage mid-stream, against the mock server's real wire formats: each adapter reports the usage
 * its provider sends before the end as `Usage` events (Anthropic `message_start` with the input
 * before the first token and `message_delta` with the cumulative output; OpenAI's usage chunk
 * before `[DONE]`; Gemini's `usageMetadata`), and the last one equals `Finish.usage`.
 */
import { assert, layer } from "@effect/vitest"
import type { ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Effect, Either } from "effect"
import * as Anthropic from "../src/Anthropic.js"
import * as Gemini from "../src/Gemini.js"
import * as OpenAi from "../src/OpenAi.js"
import { apiKey, collect, recordOf, simpleRequest, TestLayer } from "./adapters-fixtures.js"

const answer = MockProviderServer.success({
  text: "Hello there, friend",
  chunkSize: 6,
  usage: { input: 1200, output: 30 }
})

const streamed = (provider: "openai" | "anthropic" | "gemini") =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer
    yield* mock.reset
    yield* mock.enqueue([answer], { provider })
    const baseUrl = mock.baseUrl(provider)
    const adapter =
      provider === "openai"
        ? yield* OpenAi.make({ baseUrl, apiKey })
        : provider === "anthropic"
          ? yield* Anthropic.make({ baseUrl, apiKey })
          : yield* Gemini.make({ baseUrl, apiKey })
    const events = yield* collect(adapter, simpleRequest(provider, "usage-model"))
    assert.isTrue(Either.isRight(events))
    return Either.getOrElse(events, (): ReadonlyArray<ProviderStreamEvent> => [])
  })

const shape = (events: ReadonlyArray<ProviderStreamEvent>) =>
  events.flatMap((e) =>
    e._tag === "Usage"
      ? [`Usage ${e.usage.inputTokens}/${e.usage.outputTokens}`]
      : e._tag === "TextDelta"
        ? ["Text"]
        : []
  )

const finishUsage = (events: ReadonlyArray<ProviderStreamEvent>) => {
  const finish = events[events.length - 1]
  return finish?._tag === "Finish" ? finish.usage : undefined
}

/** The provider's stream has the `expected` shape, and its last `Usage` event equals `Finish.usage`. */
const streamedAs = (provider: "openai" | "anthropic" | "gemini", expected: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const events = yield* streamed(provider)
    assert.deepStrictEqual(shape(events), expected)
    const last = events.filter((e) => e._tag === "Usage").pop()
    assert.deepStrictEqual(last?._tag === "Usage" && last.usage, finishUsage(events))
  })

layer(TestLayer, { excludeTestServices: true })("usage events mid-stream", (it) => {
  it.effect("anthropic: the input before the first token, the cumulative output before the end", () =>
    // message_start carries output_tokens: 1 (the wire's own count), message_delta the total.
    streamedAs("anthropic", ["Usage 1200/1", "Text", "Text", "Text", "Text", "Usage 1200/30"])
  )

  it.effect("openai: the usage chunk before [DONE] (stream_options.include_usage)", () =>
    Effect.gen(function* () {
      yield* streamedAs("openai", ["Text", "Text", "Text", "Text", "Usage 1200/30"])
      const [request] = yield* Effect.flatMap(MockProviderServer, (m) => m.requests)
      assert.deepStrictEqual(recordOf(request?.body).stream_options, { include_usage: true })
    })
  )

  it.effect("gemini: usageMetadata on the chunk that carries it", () =>
    streamedAs("gemini", ["Text", "Text", "Text", "Text", "Usage 1200/30"])
  )
})
