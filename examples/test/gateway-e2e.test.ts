/**
 * End to end: `ModelGateway.generate` and `.stream` through the real OpenAI and Anthropic adapters
 * over real HTTP to the mock server — a 503 on the primary, a success on a compatible fallback at
 * another provider. The primary has one attempt, so no retry backoff is waited on in real time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as OpenAi from "@modelgate/adapters/openai"
import { CallRecorder, Health, ModelGateway } from "@modelgate/core"
import type { GatewayConfigError } from "@modelgate/core/Errors"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { type Behavior, MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Chunk, Effect, Layer, Option, Schema, Stream } from "effect"
import { apiKey, canary, mockGateway, targetJson, workflowJson } from "@modelgate/testing/AdapterFixtures"

const Answer = Schema.Struct({ category: Schema.Literal("billing", "other"), confidence: Schema.Number })

const openAiRef = "model://openai/gpt-4.1-mini@eu"
const anthropicRef = "model://anthropic/claude-haiku@eu"

const config = {
  targets: [
    targetJson(openAiRef, {
      pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6 },
      capabilities: { contextWindow: 128_000, maxOutputTokens: 4096, structuredOutput: { mode: "json_schema_strict" } }
    }),
    targetJson(anthropicRef, {
      pricing: { inputPerMillion: 1, outputPerMillion: 5 },
      capabilities: { contextWindow: 200_000, maxOutputTokens: 4096, structuredOutput: { mode: "json_schema" } }
    })
  ],
  workflows: [
    workflowJson("ticket.classify", [openAiRef, anthropicRef], "Answer"),
    workflowJson("ticket.reply", [openAiRef, anthropicRef])
  ]
}

/** The gateway over the real OpenAI and Anthropic adapters pointed at the mock server. */
const gatewayOver = (health: Layer.Layer<Health.Health, GatewayConfigError>) =>
  mockGateway(
    config,
    { schemas: { Answer } },
    (mock) =>
      Layer.merge(
        OpenAi.layer({ baseUrl: mock.baseUrl("openai"), apiKey }),
        Anthropic.layer({ baseUrl: mock.baseUrl("anthropic"), apiKey })
      ),
    health
  )

const GatewayLayer = gatewayOver(Health.layerOff)
const gatewayWithHealth = gatewayOver(Health.layerMemory())

const command = (workflow: string) =>
  Schema.decodeSync(ModelCommand)({
    workflow,
    tenant: "acme",
    messages: [{ _tag: "user", content: "I was charged twice" }]
  })

/** A fresh mock whose OpenAI answers 503 once and whose Anthropic answers `fallback` once. */
const openAiDownThen = (fallback: Behavior) =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer
    yield* mock.reset
    yield* mock.enqueue(MockProviderServer.failure(503, { error: { type: "server_error", message: "down" } }), {
      provider: "openai"
    })
    yield* mock.enqueue(fallback, { provider: "anthropic" })
    return mock
  })

describe("ModelGateway over real adapters and the mock server", () => {
  it.live("generate: 503 on the OpenAI primary, the Anthropic fallback answers and is validated", () =>
    Effect.gen(function* () {
      const mock = yield* openAiDownThen(MockProviderServer.success({ json: { category: "billing", confidence: 0.9 } }))
      const result = yield* ModelGateway.generate(command("ticket.classify"))
      assert.deepStrictEqual(result.content.value, { category: "billing", confidence: 0.9 })
      assert.isTrue(result.evidence.fallbackUsed)
      assert.strictEqual(String(result.evidence.target), "model://anthropic/claude-haiku@eu")
      assert.deepStrictEqual(
        result.evidence.attempts.map((a) => [String(a.target), a.outcome, a.httpStatus]),
        [
          ["model://openai/gpt-4.1-mini@eu", "unavailable", 503],
          ["model://anthropic/claude-haiku@eu", "success", 200]
        ]
      )
      const requests = yield* mock.requests
      assert.deepStrictEqual(
        requests.map((r) => r.provider),
        ["openai", "anthropic"]
      )
      for (const r of requests) assert.notInclude(r.rawBody, canary)
      const [record] = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
      assert.notInclude(JSON.stringify(record), canary)
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.live("stream: 503 on the OpenAI primary before the commit point, the Anthropic fallback streams", () =>
    Effect.gen(function* () {
      const mock = yield* openAiDownThen(MockProviderServer.success({ text: "We will refund the duplicate charge." }))
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(ModelGateway.stream(command("ticket.reply"))))
      const selected = events.flatMap((e) => (e._tag === "RouteSelected" ? [String(e.target)] : []))
      assert.deepStrictEqual(selected, ["model://openai/gpt-4.1-mini@eu", "model://anthropic/claude-haiku@eu"])
      const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
      assert.strictEqual(text, "We will refund the duplicate charge.")
      const final = events[events.length - 1]
      assert.isTrue(final?._tag === "Final" && final.result.evidence.fallbackUsed)
      const requests = yield* mock.requests
      assert.isTrue(requests.every((r) => r.stream))
    }).pipe(Effect.provide(GatewayLayer))
  )
  it.live("rate-limit headroom reported by the provider reaches the route's health", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.reset
      yield* mock.enqueue(
        MockProviderServer.success({
          json: { category: "other", confidence: 0.5 },
          headers: {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "7",
            "x-ratelimit-remaining-tokens": "1200",
            "x-ratelimit-reset-requests": "2s"
          }
        }),
        { provider: "openai" }
      )
      yield* ModelGateway.generate(command("ticket.classify"))
      const health = yield* Health.Health
      const route = Option.getOrUndefined(yield* health.snapshot("model://openai/gpt-4.1-mini@eu#gpt-4.1-mini"))
      assert.strictEqual(route?.rateLimit?.remainingRequests, 7)
      assert.strictEqual(route?.rateLimit?.limitRequests, 500)
      assert.strictEqual(route?.rateLimit?.remainingTokens, 1200)
      const rl = route?.rateLimit
      assert.isTrue(rl !== undefined && rl.resetAt !== undefined && rl.resetAt - rl.reportedAt === 2000)
    }).pipe(Effect.provide(gatewayWithHealth))
  )
})
