/**
 * Issue 26, item 5: an upstream that echoes the API key, an e-mail address or a card number from
 * the prompt into `model` or a request id does not get it recorded as `modelVersion` /
 * `providerRequestId`: on the four HTTP chat adapters, the `@effect/ai` one and both embedding
 * adapters, through the loopback mock; the drops are counted.
 */
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import type { HttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import type { EmbedRequest, ProviderAdapter } from "@modelgate/core/ProviderAdapter"
import type { Behavior, Provider as MockProvider } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import type { Scope } from "effect"
import { Chunk, Duration, Effect, Metric, Stream } from "effect"
import * as Anthropic from "../src/Anthropic.js"
import * as EffectAi from "../src/EffectAi.js"
import * as Gemini from "../src/Gemini.js"
import { echoDropped } from "../src/internal/echo.js"
import * as OpenAi from "../src/OpenAi.js"
import * as OpenAiCompatible from "../src/OpenAiCompatible.js"
import { apiKey, canary, simpleRequest, target, TestLayer } from "./adapters-fixtures.js"

type Adapter = Omit<ProviderAdapter, "provider">
type Chat = "openai" | "anthropic" | "gemini" | "openai-compatible" | "openai-responses"

const model = "echo-model"

/** What the prompt held, echoed back by the upstream; `marker` is what must reach no record. */
const echoes = [
  { name: "the API key", value: canary, marker: "CANARY" },
  { name: "an e-mail address", value: "alice.smith@example.com", marker: "alice" },
  { name: "a card number", value: "4111111111111111", marker: "4111" }
] as const

const makers: Record<Chat, (baseUrl: string) => Effect.Effect<Adapter, never, HttpClient.HttpClient | Scope.Scope>> = {
  openai: (baseUrl) => OpenAi.make({ baseUrl, apiKey }),
  anthropic: (baseUrl) => Anthropic.make({ baseUrl, apiKey }),
  gemini: (baseUrl) => Gemini.make({ baseUrl, apiKey }),
  "openai-compatible": (baseUrl) => OpenAiCompatible.make({ baseUrl, apiKey }),
  "openai-responses": (baseUrl) =>
    EffectAi.makeProviderAdapter("openai-responses", {
      model: (name) => OpenAiLanguageModel.layer({ model: name }),
      apiKey
    }).pipe(Effect.provide(OpenAiClient.layer({ apiUrl: baseUrl, apiKey })))
}

const adapterFor = (provider: Chat) =>
  Effect.flatMap(MockProviderServer, (mock) => makers[provider](mock.baseUrl(provider)))

const script = (provider: MockProvider, ...behaviors: ReadonlyArray<Behavior>) =>
  Effect.flatMap(MockProviderServer, (mock) => Effect.zipRight(mock.reset, mock.enqueue(behaviors, { provider })))

/**
 * A Responses API answer whose `id` and `model` are `id` and `model` (the mock makes the body id
 * itself): the mock's own answer, fetched over loopback, with both fields replaced.
 */
const responsesWith = (id: string, echoedModel: string, stream: boolean) =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer
    yield* script("openai-responses", MockProviderServer.success({ text: "ok" }))
    const text = yield* Effect.promise(() =>
      fetch(`${mock.baseUrl("openai-responses")}/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, input: "hi", stream })
      }).then((r) => r.text())
    )
    const mockId = /"id":"(resp_mock_\d+)"/.exec(text)?.[1] ?? "resp_mock_missing"
    const body = text.replaceAll(mockId, id).replaceAll(`"model":"${model}"`, `"model":"${echoedModel}"`)
    return MockProviderServer.raw(200, body, { contentType: stream ? "text/event-stream" : "application/json" })
  })

/** Everything of an answer that reaches a record, as text. */
const recorded = (value: unknown) => JSON.stringify(value) ?? ""

const scriptEchoes = (provider: Chat, value: string) =>
  Effect.gen(function* () {
    // In the model's family (it starts with the requested model) and of a request-id shape, but holding the echo.
    const echoedModel = `${model}-${value}`
    const echoedId = provider === "anthropic" ? `msg_${value}` : `req_${value}`
    if (provider === "openai-responses") {
      const generated = yield* responsesWith(echoedId, echoedModel, false)
      const streamed = yield* responsesWith(echoedId, echoedModel, true)
      yield* script("openai-responses", generated, streamed, MockProviderServer.failure(429, { requestId: echoedId }))
      return
    }
    const success = MockProviderServer.success({ model: echoedModel, systemFingerprint: "fp_1", requestId: echoedId })
    // OpenAI-style servers without a request-id header fall back to the body id: echo it there too.
    const bodyId =
      provider === "openai-compatible"
        ? [
            MockProviderServer.raw(
              200,
              JSON.stringify({
                id: `chatcmpl-${value}`,
                object: "chat.completion",
                model: echoedModel,
                choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "ok" } }]
              }),
              { contentType: "application/json" }
            )
          ]
        : []
    yield* script(provider, success, success, MockProviderServer.failure(429, { requestId: echoedId }), ...bodyId)
  })

const chats: ReadonlyArray<Chat> = ["openai", "anthropic", "gemini", "openai-compatible", "openai-responses"]

const embedRequest = (provider: string): EmbedRequest => ({
  target: target(provider, model),
  inputs: ["first text"],
  dimensions: undefined,
  timeout: Duration.seconds(10)
})

describe("echoes of the prompt in model versions and request ids", () => {
  for (const provider of chats) {
    for (const echo of echoes) {
      it.scoped(`${provider}: ${echo.name} echoed into model and request id is not recorded`, () =>
        Effect.gen(function* () {
          const adapter = yield* adapterFor(provider)
          yield* scriptEchoes(provider, echo.value)
          const request = simpleRequest(provider, model)
          const generated = yield* adapter.generate(request)
          assert.isFalse(recorded([generated.modelVersion, generated.requestId]).includes(echo.marker), provider)
          const events = Chunk.toReadonlyArray(yield* Stream.runCollect(adapter.stream(request)))
          const ids = events.flatMap((e) =>
            e._tag === "Started" ? [e.requestId] : e._tag === "Finish" ? [e.modelVersion] : []
          )
          assert.strictEqual(ids.length, 2, provider)
          assert.isFalse(recorded(ids).includes(echo.marker), provider)
          const error = yield* Effect.flip(adapter.generate(request))
          assert.strictEqual(error.kind, "rate_limited")
          assert.isFalse(recorded(error.requestId).includes(echo.marker), provider)
          if (provider === "openai-compatible") {
            const fromBody = yield* adapter.generate(request)
            assert.isUndefined(fromBody.requestId)
            assert.isUndefined(fromBody.modelVersion)
          }
        }).pipe(Effect.provide(TestLayer))
      )
    }
  }

  for (const provider of ["openai", "gemini"] as const) {
    for (const echo of echoes) {
      it.scoped(`${provider} embeddings: ${echo.name} echoed into model and request id is not recorded`, () =>
        Effect.gen(function* () {
          const adapter = yield* adapterFor(provider)
          const embed = adapter.embed
          if (embed === undefined) return yield* Effect.dieMessage("no embed")
          yield* script(
            provider,
            MockProviderServer.success({ model: `${model}-${echo.value}`, requestId: `req_${echo.value}` }),
            MockProviderServer.failure(429, { requestId: `req_${echo.value}` })
          )
          const answer = yield* embed(embedRequest(provider))
          assert.strictEqual(answer.vectors.length, 1)
          assert.isFalse(recorded([answer.modelVersion, answer.requestId]).includes(echo.marker), provider)
          const error = yield* Effect.flip(embed(embedRequest(provider)))
          assert.isFalse(recorded(error.requestId).includes(echo.marker), provider)
        }).pipe(Effect.provide(TestLayer))
      )
    }
  }

  it.scoped("what passes the check is kept, what fails is dropped and counted per provider and field", () =>
    Effect.gen(function* () {
      const counted = (provider: string, field: string) =>
        Metric.value(echoDropped.pipe(Metric.tagged("provider", provider), Metric.tagged("field", field))).pipe(
          Effect.map((state) => state.count)
        )
      const adapter = yield* adapterFor("anthropic")
      const request = simpleRequest("anthropic", "claude-sonnet-4-5")
      const before = [yield* counted("anthropic", "model_version"), yield* counted("anthropic", "request_id")]
      yield* script(
        "anthropic",
        MockProviderServer.success({ model: "claude-sonnet-4-5-20250929", requestId: "req_011CSHxF" }),
        // Not of the family; not of Anthropic's request-id shape.
        MockProviderServer.success({ model: "gpt-4o", requestId: "abc.def" })
      )
      const kept = yield* adapter.generate(request)
      assert.strictEqual(kept.modelVersion, "claude-sonnet-4-5-20250929")
      assert.strictEqual(kept.requestId, "req_011CSHxF")
      const dropped = yield* adapter.generate(request)
      assert.isUndefined(dropped.modelVersion)
      assert.isUndefined(dropped.requestId)
      assert.deepStrictEqual(
        [yield* counted("anthropic", "model_version"), yield* counted("anthropic", "request_id")],
        [(before[0] ?? 0) + 1, (before[1] ?? 0) + 1]
      )
    }).pipe(Effect.provide(TestLayer))
  )
})
