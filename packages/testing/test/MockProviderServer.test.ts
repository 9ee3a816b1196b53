import { assert, describe, it } from "@effect/vitest"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { MockProviderServer } from "../src/MockProviderServer.js"
import { postJson } from "./support/post.js"

const post = (url: string, body: unknown) =>
  Effect.flatMap(postJson(url, body), (response) =>
    Effect.map(response.text, (text) => ({ status: response.status, headers: response.headers, text }))
  )

const chat = (mock: MockProviderServer["Type"], model: string, stream = false) =>
  post(`${mock.baseUrl("openai")}/chat/completions`, { model, messages: [], ...(stream ? { stream: true } : {}) })

const Live = Layer.merge(MockProviderServer.layer(), NodeHttpClient.layerUndici)

describe("MockProviderServer", () => {
  it.effect("scripts are consumed in order, then the handler, then the default success", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue([MockProviderServer.failure(503), MockProviderServer.failure(429)], {
        provider: "openai",
        model: "m"
      })
      yield* mock.enqueue(MockProviderServer.failure(400), { model: "m" })
      yield* mock.setHandler((request) => (request.model === "m" ? MockProviderServer.failure(418) : undefined))
      const statuses = []
      for (let i = 0; i < 5; i++) statuses.push((yield* chat(mock, "m")).status)
      assert.deepStrictEqual(statuses, [503, 429, 400, 418, 418])
      const other = yield* chat(mock, "other")
      assert.strictEqual(other.status, 200)
      assert.strictEqual(JSON.parse(other.text).choices[0].message.content, "Hello from the mock provider.")
      const recorded = yield* mock.requests
      assert.strictEqual(recorded.length, 6)
      assert.deepInclude(recorded[0], {
        provider: "openai",
        method: "POST",
        url: "/v1/chat/completions",
        model: "m",
        stream: false
      })
      yield* mock.reset
      assert.deepStrictEqual(yield* mock.requests, [])
      assert.strictEqual((yield* chat(mock, "m")).status, 200)
    }).pipe(Effect.provide(Live))
  )

  it.effect("keeps real time under the TestClock (latency is a real delay)", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(MockProviderServer.success({ latencyMs: 30 }))
      const start = Date.now()
      const response = yield* chat(mock, "slow")
      assert.strictEqual(response.status, 200)
      assert.isAtLeast(Date.now() - start, 25)
    }).pipe(Effect.provide(Live))
  )

  it.effect("error envelopes per provider, with request ids and extra headers", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const spec = { headers: { "retry-after": "2" }, requestId: "req_x" }
      yield* mock.enqueue(MockProviderServer.failure(429, spec))
      const openai = yield* chat(mock, "e")
      assert.deepStrictEqual(JSON.parse(openai.text), {
        error: { message: "mock error", type: "requests", param: null, code: "rate_limit_exceeded" }
      })
      assert.strictEqual(openai.headers["x-request-id"], "req_x")
      assert.strictEqual(openai.headers["retry-after"], "2")
      yield* mock.enqueue(MockProviderServer.failure(529, spec))
      const anthropic = yield* post(`${mock.baseUrl("anthropic")}/messages`, { model: "e", messages: [] })
      assert.deepStrictEqual(JSON.parse(anthropic.text), {
        type: "error",
        error: { type: "overloaded_error", message: "mock error" },
        request_id: "req_x"
      })
      assert.strictEqual(anthropic.headers["request-id"], "req_x")
      yield* mock.enqueue(MockProviderServer.failure(503))
      const gemini = yield* post(`${mock.baseUrl("gemini")}/models/e:generateContent`, { contents: [] })
      assert.deepStrictEqual(JSON.parse(gemini.text), {
        error: { code: 503, message: "mock error", status: "UNAVAILABLE" }
      })
      const unknown = yield* post(`${mock.url}/v1/unknown`, {})
      assert.strictEqual(unknown.status, 404)
    }).pipe(Effect.provide(Live))
  )

  it.effect("streams: OpenAI frames end with [DONE]; recording can be turned off", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const streamed = yield* chat(mock, "s", true)
      assert.strictEqual(streamed.headers["content-type"], "text/event-stream")
      assert.isTrue(streamed.text.endsWith("data: [DONE]\n\n"))
      assert.deepStrictEqual(yield* mock.requests, [])
    }).pipe(Effect.provide(Layer.merge(MockProviderServer.layer({ record: false }), NodeHttpClient.layerUndici)))
  )

  it.effect("the default success answers structured-output requests with a value of the schema", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const schema = {
        type: "object",
        properties: {
          category: { type: "string", enum: ["billing", "bug"] },
          score: { type: "number", minimum: 1 },
          tags: { type: "array", items: { type: "string" }, minItems: 1 },
          note: { anyOf: [{ type: "null" }, { type: "string" }] }
        },
        required: ["category", "score", "tags", "note"],
        additionalProperties: false
      }
      const response = yield* post(`${mock.baseUrl("anthropic")}/messages`, {
        model: "c",
        messages: [],
        output_config: { format: { type: "json_schema", schema } }
      })
      const text = JSON.parse(response.text).content[0].text
      assert.deepStrictEqual(JSON.parse(text), { category: "billing", score: 1, tags: ["example"], note: null })
    }).pipe(Effect.provide(Live))
  )
})
