/**
 * `ModelGateway.embed` end to end over real HTTP (the mock server on 127.0.0.1): the OpenAI adapter
 * registered twice (two deployments of one model, one vector space) and a Gemini embedding model of
 * another family in the same route. A 503 on the primary falls back to the other deployment; the
 * Gemini target is excluded (`EMBEDDING_INCOMPATIBLE`) and never receives a request.
 */
import { assert, layer } from "@effect/vitest"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import {
  Budgets,
  CallRecorder,
  Concurrency,
  Embeddings,
  GatewayConfig,
  Health,
  ModelGateway,
  TokenEstimator
} from "@modelgate/core"
import { TargetRef } from "@modelgate/core/ModelTarget"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Effect, Layer, Schema } from "effect"
import { apiKey, TestLayer } from "./adapters-fixtures.js"

const refs = {
  primary: TargetRef.make("model://openai/te3s@eu"),
  backup: TargetRef.make("model://openai-backup/te3s@eu"),
  gemini: TargetRef.make("model://gemini/gemini-embedding-001@eu")
}

const target = (ref: string, provider: string, model: string, inputPerMillion: number) => ({
  ref,
  provider,
  model,
  capabilities: {
    streaming: false,
    contextWindow: 8191,
    maxOutputTokens: 1,
    embeddings: { dimensions: 4, sendDimensions: true }
  },
  regions: ["eu"] as [string],
  dataClasses: ["internal"] as [string],
  pricing: { inputPerMillion, outputPerMillion: 0, pricingVersion: "emb-2026-12" },
  limits: { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }
})

const workflow = (name: string, route: [string, ...Array<string>], family: string) => ({
  name,
  policyVersion: "p1",
  prompt: { id: name, version: "1" },
  route,
  timeout: 10_000,
  regions: ["eu"] as [string],
  dataClass: "internal",
  embedding: { family, dimensions: 4 }
})

const json = GatewayConfig.make({
  targets: [
    target(refs.primary, "openai", "text-embedding-3-small", 20),
    target(refs.backup, "openai-backup", "text-embedding-3-small", 20),
    target(refs.gemini, "gemini", "gemini-embedding-001", 150)
  ],
  workflows: [
    workflow("docs.embed", [refs.primary, refs.gemini, refs.backup], "text-embedding-3-small"),
    workflow("notes.embed", [refs.gemini], "gemini-embedding-001")
  ]
})

const gateway = ModelGateway.layerJson(json).pipe(
  Layer.provideMerge(
    Layer.unwrapEffect(
      Effect.map(MockProviderServer, (mock) =>
        Layer.mergeAll(
          OpenAi.layer({ baseUrl: mock.baseUrl("openai"), apiKey }),
          OpenAi.layer({ id: "openai-backup", baseUrl: mock.baseUrl("openai"), apiKey }),
          Gemini.layer({ baseUrl: mock.baseUrl("gemini"), apiKey })
        )
      )
    )
  ),
  Layer.provideMerge(Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory))
)

const command = (workflow: string, inputs: readonly [string, ...Array<string>]) =>
  Schema.decodeSync(Embeddings.EmbedCommand)({ workflow, tenant: "acme", inputs })

layer(TestLayer, { excludeTestServices: true })("ModelGateway.embed over HTTP", (it) => {
  it.effect("a 503 on the primary falls back to the same model elsewhere; another family is never called", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.reset
      yield* mock.enqueue(MockProviderServer.failure(503), { provider: "openai", model: "text-embedding-3-small" })
      const result = yield* ModelGateway.embed(command("docs.embed", ["first", "second"]))
      assert.deepStrictEqual(
        result.vectors.map((v) => v.length),
        [4, 4]
      )
      const e = result.evidence
      assert.strictEqual(e.target, refs.backup)
      assert.isTrue(e.fallbackUsed)
      assert.deepStrictEqual(
        e.attempts.map((a) => [a.target, a.outcome, a.httpStatus]),
        [
          [refs.primary, "unavailable", 503],
          [refs.backup, "success", 200]
        ]
      )
      assert.deepStrictEqual(
        e.excluded.map((x) => [x.target, x.reason]),
        [[refs.gemini, "EMBEDDING_INCOMPATIBLE"]]
      )
      // The mock's default success reports 12 prompt tokens.
      assert.strictEqual(e.usage.inputTokens, 12)
      assert.strictEqual(e.cost.actual, (12 * 20) / 1_000_000)
      const requests = yield* mock.requests
      assert.deepStrictEqual(
        requests.map((r) => [r.provider, r.url]),
        [
          ["openai", "/v1/embeddings"],
          ["openai", "/v1/embeddings"]
        ]
      )
      for (const r of requests) {
        assert.deepStrictEqual(r.body, {
          model: "text-embedding-3-small",
          input: ["first", "second"],
          encoding_format: "float",
          dimensions: 4
        })
      }
      const [record] = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
      assert.strictEqual(record?.mode, "embed")
      assert.isFalse(JSON.stringify(record).includes("first"))
    }).pipe(Effect.provide(gateway))
  )

  it.effect("Gemini reports no usage: the call is billed the estimated input", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.reset
      const inputs = ["a note about invoices", "a note about passwords", "a third note"] as const
      const result = yield* ModelGateway.embed(command("notes.embed", inputs))
      assert.deepStrictEqual(
        result.vectors.map((v) => v.length),
        [4, 4, 4]
      )
      const estimated = TokenEstimator.estimateInput({
        messages: inputs.map((content) => ({ _tag: "user" as const, content }))
      })
      assert.strictEqual(result.evidence.usage.inputTokens, estimated)
      assert.strictEqual(result.evidence.cost.actual, (estimated * 150) / 1_000_000)
      const [request] = yield* mock.requests
      assert.strictEqual(request?.url, "/v1beta/models/gemini-embedding-001:batchEmbedContents")
    }).pipe(Effect.provide(gateway))
  )
})
