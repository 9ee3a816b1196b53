/**
 * Fidelity of the mock server's OpenAI Responses API: the official `openai` SDK (a dev dependency)
 * parses its answers, streams and errors into the meaning `@effect/ai-openai` (through
 * `EffectAi.providerAdapter`) reads from them. If the SDK rejects the mock's output, the mock is wrong.
 */
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { assert, layer } from "@effect/vitest"
import * as EffectAi from "@modelgate/adapters/effect-ai"
import { ToolDefinition } from "@modelgate/core/ModelCommand"
import type { ProviderRequest } from "@modelgate/core/ProviderAdapter"
import type { Behavior } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Chunk, Duration, Effect, Stream } from "effect"
import OpenAI from "openai"
import { apiKey, canary, simpleRequest, TestLayer } from "@modelgate/testing/AdapterFixtures"

const lookup = new ToolDefinition({
  name: "lookup",
  description: "Look up an order.",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"], additionalProperties: false }
})

const request = (model: string, tools: ReadonlyArray<ToolDefinition> = []): ProviderRequest =>
  simpleRequest("openai-responses", model, { tools, maxOutputTokens: 64 })

/** Both clients on the mock: the official SDK, and the adapter over `@effect/ai-openai`. */
const clients = Effect.gen(function* () {
  const mock = yield* MockProviderServer
  const ours = yield* EffectAi.makeProviderAdapter("openai-responses", {
    model: (model) => OpenAiLanguageModel.layer({ model })
  }).pipe(Effect.provide(OpenAiClient.layer({ apiUrl: mock.baseUrl("openai-responses"), apiKey })))
  return { sdk: new OpenAI({ apiKey: canary, baseURL: mock.baseUrl("openai-responses"), maxRetries: 0 }), ours }
})

const script = (model: string, behavior: Behavior) =>
  Effect.flatMap(MockProviderServer, (mock) =>
    mock.enqueue([behavior, behavior], { provider: "openai-responses", model })
  )

layer(TestLayer, { excludeTestServices: true })("official openai SDK against the mock Responses API", (it) => {
  it.scoped("a response with text, a function call and usage reads the same in both", () =>
    Effect.gen(function* () {
      const { sdk, ours } = yield* clients
      yield* script(
        "fid-resp-ok",
        MockProviderServer.success({
          text: "Checking.",
          toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "x" } }],
          usage: { input: 120, output: 40, cached: 64, reasoning: 16 },
          requestId: "req_fid_r1"
        })
      )
      const { data, request_id } = yield* Effect.promise(() =>
        sdk.responses.create({ model: "fid-resp-ok", input: "hi" }).withResponse()
      )
      const response = yield* ours.generate(request("fid-resp-ok", [lookup]))
      assert.strictEqual(request_id, "req_fid_r1")
      assert.strictEqual(data.output_text, "Checking.")
      assert.strictEqual(response.text, data.output_text)
      const call = data.output.find((item) => item.type === "function_call")
      assert.deepStrictEqual(
        call?.type === "function_call" ? [call.call_id, call.name, call.arguments] : [],
        response.toolCalls.flatMap((c) => [c.id, c.name, c.arguments])
      )
      assert.deepStrictEqual(
        [data.usage?.input_tokens, data.usage?.input_tokens_details.cached_tokens, data.usage?.output_tokens],
        [response.usage?.inputTokens, response.usage?.cachedInputTokens, response.usage?.outputTokens]
      )
      assert.strictEqual(response.finishReason, "tool_calls")
    })
  )

  it.scoped("a stream: the SDK's event types and text deltas are the adapter's", () =>
    Effect.gen(function* () {
      const { sdk, ours } = yield* clients
      yield* script("fid-resp-stream", MockProviderServer.success({ text: "Hello there, friend.", chunkSize: 5 }))
      const sdkDeltas = yield* Effect.promise(async () => {
        const out: Array<string> = []
        const stream = await sdk.responses.create({ model: "fid-resp-stream", input: "hi", stream: true })
        for await (const event of stream) if (event.type === "response.output_text.delta") out.push(event.delta)
        return out
      })
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(ours.stream(request("fid-resp-stream"))))
      assert.deepStrictEqual(sdkDeltas, ["Hello", " ther", "e, fr", "iend."])
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])),
        sdkDeltas
      )
      assert.strictEqual(events.at(-1)?._tag, "Finish")
    })
  )

  it.scoped("a 429: the SDK's status and code, the adapter's rate_limited with the retry-after", () =>
    Effect.gen(function* () {
      const { sdk, ours } = yield* clients
      yield* script(
        "fid-resp-429",
        MockProviderServer.failure(429, { headers: { "retry-after": "3" }, error: { code: "rate_limit_exceeded" } })
      )
      const thrown = yield* Effect.flip(
        Effect.tryPromise({
          try: () => sdk.responses.create({ model: "fid-resp-429", input: "hi" }),
          catch: (e) => e
        })
      )
      const error = yield* Effect.flip(ours.generate(request("fid-resp-429")))
      assert.isTrue(thrown instanceof OpenAI.APIError)
      if (!(thrown instanceof OpenAI.APIError)) return
      assert.deepStrictEqual([thrown.status, thrown.code], [429, "rate_limit_exceeded"])
      assert.deepStrictEqual(
        [error.kind, error.httpStatus, error.providerCode, error.retryAfter && Duration.toMillis(error.retryAfter)],
        ["rate_limited", 429, "rate_limit_exceeded", 3000]
      )
    })
  )
})
