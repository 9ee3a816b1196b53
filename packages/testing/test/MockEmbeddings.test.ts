/**
 * The mock server's embeddings routes: OpenAI `POST /v1/embeddings`, Gemini `:embedContent` and
 * `:batchEmbedContents`, scripted like every other route (queues by provider and model, statuses
 * with the provider's error envelope, headers, raw bodies).
 */
import { assert, describe, it } from "@effect/vitest"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { MockProviderServer } from "../src/MockProviderServer.js"
import { postJson } from "./support/post.js"

const post = (url: string, body: unknown) =>
  Effect.flatMap(postJson(url, body), (response) =>
    Effect.map(response.json, (json) => ({ status: response.status, headers: response.headers, json }))
  )

const Live = Layer.merge(MockProviderServer.layer(), NodeHttpClient.layerUndici)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const at = (u: unknown, ...path: ReadonlyArray<string | number>): unknown =>
  path.reduce<unknown>((v, k) => (Array.isArray(v) && typeof k === "number" ? v[k] : isRecord(v) ? v[k] : undefined), u)

describe("MockProviderServer embeddings", () => {
  it.effect("OpenAI: one vector per input of the requested length, usage from the script, the requested model", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(MockProviderServer.success({ usage: { input: 33, output: 0 } }), {
        provider: "openai",
        model: "text-embedding-3-small"
      })
      const r = yield* post(`${mock.baseUrl("openai")}/embeddings`, {
        model: "text-embedding-3-small",
        input: ["a", "b", "a"],
        dimensions: 5
      })
      assert.strictEqual(r.status, 200)
      assert.strictEqual(at(r.json, "model"), "text-embedding-3-small")
      assert.deepStrictEqual(at(r.json, "usage"), { prompt_tokens: 33, total_tokens: 33 })
      assert.deepStrictEqual(
        [0, 1, 2].map((i) => at(r.json, "data", i, "index")),
        [0, 1, 2]
      )
      const first = at(r.json, "data", 0, "embedding")
      assert.isTrue(Array.isArray(first) && first.length === 5)
      assert.deepStrictEqual(first, at(r.json, "data", 2, "embedding"))
      assert.notDeepEqual(first, at(r.json, "data", 1, "embedding"))
      const [recorded] = (yield* mock.requests).slice(-1)
      assert.deepInclude(recorded, { provider: "openai", url: "/v1/embeddings", model: "text-embedding-3-small" })
      // `usage: null` reports none; without `dimensions` the vectors have 8.
      yield* mock.enqueue(MockProviderServer.success({ usage: null }), { provider: "openai" })
      const bare = yield* post(`${mock.baseUrl("openai")}/embeddings`, { model: "m", input: "one" })
      assert.strictEqual(at(bare.json, "usage"), undefined)
      const vector = at(bare.json, "data", 0, "embedding")
      assert.isTrue(Array.isArray(vector) && vector.length === 8)
    }).pipe(Effect.provide(Live))
  )

  it.effect("Gemini: batch and single methods, the model from the path, no usage", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const batch = yield* post(`${mock.baseUrl("gemini")}/models/gemini-embedding-001:batchEmbedContents`, {
        requests: [
          { model: "models/gemini-embedding-001", content: { parts: [{ text: "x" }] }, outputDimensionality: 3 },
          { model: "models/gemini-embedding-001", content: { parts: [{ text: "y" }] }, outputDimensionality: 3 }
        ]
      })
      assert.strictEqual(batch.status, 200)
      const values = [0, 1].map((i) => at(batch.json, "embeddings", i, "values"))
      assert.isTrue(values.every((v) => Array.isArray(v) && v.length === 3))
      assert.strictEqual(at(batch.json, "usageMetadata"), undefined)
      const single = yield* post(`${mock.baseUrl("gemini")}/models/gemini-embedding-001:embedContent`, {
        content: { parts: [{ text: "x" }] },
        outputDimensionality: 3
      })
      assert.deepStrictEqual(at(single.json, "embedding", "values"), values[0])
      const models = (yield* mock.requests).slice(-2).map((r) => [r.provider, r.model, r.stream])
      assert.deepStrictEqual(models, [
        ["gemini", "gemini-embedding-001", false],
        ["gemini", "gemini-embedding-001", false]
      ])
    }).pipe(Effect.provide(Live))
  )

  it.effect("failures use each provider's error envelope, with the scripted headers", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(MockProviderServer.failure(429, { headers: { "retry-after": "3" } }), {
        provider: "openai",
        model: "limited"
      })
      yield* mock.enqueue(MockProviderServer.failure(503), { provider: "gemini", model: "busy" })
      const openai = yield* post(`${mock.baseUrl("openai")}/embeddings`, { model: "limited", input: ["a"] })
      assert.strictEqual(openai.status, 429)
      assert.strictEqual(openai.headers["retry-after"], "3")
      assert.strictEqual(at(openai.json, "error", "code"), "rate_limit_exceeded")
      const gemini = yield* post(`${mock.baseUrl("gemini")}/models/busy:batchEmbedContents`, { requests: [] })
      assert.strictEqual(gemini.status, 503)
      assert.strictEqual(at(gemini.json, "error", "status"), "UNAVAILABLE")
    }).pipe(Effect.provide(Live))
  )
})
