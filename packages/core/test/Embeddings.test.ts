/**
 * Embeddings through the gateway (`ModelGateway.embed`): the same pipeline as `generate` (routing,
 * deadline, budget, breaker, retries, fallback, evidence, one CallRecord) with the adapter's `embed`
 * as the attempt's operation. Fallback stays inside the workflow's vector space: targets of another
 * family or length are excluded with `EMBEDDING_INCOMPATIBLE` and never called. Virtual time only.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  AgentRun,
  Budgets,
  CallRecorder,
  Concurrency,
  Embeddings,
  type Errors,
  GatewayConfig,
  Health,
  ModelGateway,
  ProviderAdapter,
  TokenEstimator
} from "@modelgate/core"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ModelCommand, TenantId } from "@modelgate/core/ModelCommand"
import { Evidence, Usage } from "@modelgate/core/ModelResult"
import { ModelTarget, TargetRef } from "@modelgate/core/ModelTarget"
import type { Workflow } from "@modelgate/core/Workflow"
import { decodeTarget, decodeWorkflow } from "./fixtures.js"
import { Clock, Duration, Effect, Layer, Schema, Stream } from "effect"
import { keepingTracer } from "./keptSpans.js"
import { driven, failureOf } from "./virtualTime.js"

const refs = {
  small: TargetRef.make("model://oa/te3s@eu"),
  large: TargetRef.make("model://oa/te3l@eu"),
  small8: TargetRef.make("model://oa/te3s-8@eu"),
  azure: TargetRef.make("model://az/te3s@eu"),
  gemini: TargetRef.make("model://gm/gemini-embedding@eu"),
  chat: TargetRef.make("model://oa/chat@eu")
}

const embeddingTarget = (
  ref: string,
  provider: string,
  model: string,
  embeddings: { readonly dimensions: number; readonly family?: string; readonly sendDimensions?: boolean },
  maxAttempts = 1
) =>
  decodeTarget({
    ref,
    provider,
    model,
    capabilities: { streaming: false, contextWindow: 8191, maxOutputTokens: 1, embeddings },
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { inputPerMillion: 20, outputPerMillion: 0, pricingVersion: "emb-2026-12" },
    limits: { maxAttempts, perAttemptTimeout: 400, minimumAttemptTime: 50 }
  })

const targets = [
  embeddingTarget(refs.small, "oa", "text-embedding-3-small", { dimensions: 4 }),
  embeddingTarget(refs.large, "oa", "text-embedding-3-large", { dimensions: 4 }),
  embeddingTarget(refs.small8, "oa", "text-embedding-3-small", { dimensions: 8, sendDimensions: true }),
  embeddingTarget(refs.azure, "az", "text-embedding-3-small", { dimensions: 4 }),
  embeddingTarget(refs.gemini, "gm", "gemini-embedding-001", { dimensions: 4 }),
  decodeTarget({
    ref: refs.chat,
    provider: "oa",
    model: "chat-model",
    capabilities: { contextWindow: 128_000, maxOutputTokens: 4096 },
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "emb-2026-12" }
  })
]

const workflow = (fields: Partial<typeof Workflow.Encoded> & { readonly name: string }) =>
  decodeWorkflow({
    policyVersion: "policy-1",
    prompt: { id: fields.name, version: "1" },
    route: [refs.small, refs.large, refs.small8, refs.azure],
    timeout: 1000,
    regions: ["eu"],
    dataClass: "internal",
    embedding: { family: "text-embedding-3-small", dimensions: 4 },
    ...fields
  })

const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets,
    workflows: [
      workflow({ name: "docs.embed" }),
      workflow({
        name: "docs.embed8",
        route: [refs.small8],
        embedding: { family: "text-embedding-3-small", dimensions: 8 }
      }),
      workflow({ name: "docs.reply", route: [refs.chat], embedding: undefined })
    ]
  })
}

/** One `embed` request as an adapter received it. */
interface Sent {
  readonly target: string
  readonly inputs: ReadonlyArray<string>
  readonly dimensions: number | undefined
  readonly task: string | undefined
  readonly startedAt: number
  readonly timeoutMs: number
}

/** What the scripted embedder does with one request to a target. */
type Step =
  | { readonly _tag: "Vectors"; readonly after: number; readonly usage?: number; readonly length?: number }
  | { readonly _tag: "Fail"; readonly after: number; readonly error: ProviderError }
  | { readonly _tag: "Hang" }

const vectors = (after: number, usage?: number): Step =>
  usage === undefined ? { _tag: "Vectors", after } : { _tag: "Vectors", after, usage }
const overloaded = (after: number): Step => ({
  _tag: "Fail",
  after,
  error: new ProviderError({ kind: "overloaded", processed: "no", httpStatus: 503, detail: "test: 503" })
})

/** Input `i`'s vector: `i + k/10` for each of its `length` dimensions. */
const vectorOf = (i: number, length: number) => Array.from({ length }, (_, k) => i + k / 10)

/** A provider whose `embed` follows `scripts` (per target ref) under the test clock, logging every request. */
const embedder = (provider: string, scripts: Map<string, Array<Step>>, log: Array<Sent>) =>
  ProviderAdapter.layer(
    provider,
    Effect.succeed({
      generate: () =>
        Effect.succeed({
          text: "hello",
          toolCalls: [],
          finishReason: "stop" as const,
          refusal: false,
          usage: new Usage({ inputTokens: 10, outputTokens: 2 }),
          modelVersion: undefined,
          requestId: undefined,
          httpStatus: 200
        }),
      stream: () => Stream.dieMessage("not streamed in these tests"),
      embed: (request: ProviderAdapter.EmbedRequest) =>
        Effect.gen(function* () {
          const startedAt = yield* Clock.currentTimeMillis
          log.push({
            target: request.target.ref,
            inputs: request.inputs,
            dimensions: request.dimensions,
            task: request.task,
            startedAt,
            timeoutMs: Duration.toMillis(request.timeout)
          })
          const step: Step = scripts.get(request.target.ref)?.shift() ?? vectors(50)
          if (step._tag === "Hang") return yield* Effect.never
          yield* Effect.sleep(step.after)
          if (step._tag === "Fail") return yield* Effect.fail(step.error)
          const length = step.length ?? request.target.capabilities.embeddings?.dimensions ?? 0
          return {
            vectors: request.inputs.map((_, i) => vectorOf(i, length)),
            usage: step.usage === undefined ? undefined : new Usage({ inputTokens: step.usage, outputTokens: 0 }),
            modelVersion: `${request.target.model}-v1`,
            requestId: `req-${log.length}`,
            httpStatus: 200
          }
        })
    })
  )

const gateway = (
  scripts: Record<string, ReadonlyArray<Step>> = {},
  budgets: Layer.Layer<Budgets.Budgets, Errors.GatewayConfigError> = Budgets.layerOff,
  def: GatewayConfig.Definition = definition,
  health: Layer.Layer<Health.Health, Errors.GatewayConfigError> = Health.layerOff
) => {
  const log: Array<Sent> = []
  const map = new Map(Object.entries(scripts).map(([k, v]) => [k, [...v]]))
  const layer = ModelGateway.layer(def).pipe(
    Layer.provideMerge(Layer.mergeAll(embedder("oa", map, log), embedder("az", map, log), embedder("gm", map, log))),
    Layer.provideMerge(Layer.mergeAll(budgets, Concurrency.layerOff, health, CallRecorder.layerMemory))
  )
  return { layer, log }
}

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

const inputs = ["refund policy for damaged goods", "how to reset a password"] as const

const embedCommand = (fields: Partial<typeof Embeddings.EmbedCommand.Encoded> = {}) =>
  Schema.decodeSync(Embeddings.EmbedCommand)({ workflow: "docs.embed", tenant: "acme", inputs: [...inputs], ...fields })

const incompatible = [
  {
    target: refs.large,
    reason: "EMBEDDING_INCOMPATIBLE" as const,
    detail: "vectors text-embedding-3-large/4, the workflow's space is text-embedding-3-small/4"
  },
  {
    target: refs.small8,
    reason: "EMBEDDING_INCOMPATIBLE" as const,
    detail: "vectors text-embedding-3-small/8, the workflow's space is text-embedding-3-small/4"
  }
]

describe("ModelGateway.embed", () => {
  it.effect("answers one vector per input with exact evidence and one embed CallRecord, without content", () => {
    const { layer, log } = gateway({ [refs.small]: [vectors(50, 12)] })
    return Effect.gen(function* () {
      const result = yield* driven(ModelGateway.embed(embedCommand()))
      assert.deepStrictEqual(result.vectors, [vectorOf(0, 4), vectorOf(1, 4)])
      const e = result.evidence
      assert.strictEqual(e.target, refs.small)
      assert.strictEqual(e.model, "text-embedding-3-small")
      assert.strictEqual(e.modelVersion, "text-embedding-3-small-v1")
      assert.deepStrictEqual(e.embedding, { family: "text-embedding-3-small", dimensions: 4, inputs: 2 })
      assert.deepStrictEqual(e.eligible, [refs.small, refs.azure])
      assert.deepStrictEqual(
        e.excluded.map((x) => ({ target: x.target, reason: x.reason, detail: x.detail })),
        incompatible
      )
      assert.deepStrictEqual(
        { ...e.usage },
        { inputTokens: 12, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 }
      )
      assert.strictEqual(e.cost.actual, (12 * 20) / 1_000_000)
      assert.strictEqual(e.totalLatencyMs, 50)
      assert.isFalse(e.fallbackUsed)
      assert.deepStrictEqual(
        e.attempts.map((a) => [a.target, a.outcome, a.latencyMs, a.timeoutMs, a.usage?.inputTokens, a.cost]),
        [[refs.small, "success", 50, 400, 12, (12 * 20) / 1_000_000]]
      )
      // The adapter got the inputs in order; this target does not ask for dimensions on the wire.
      assert.deepStrictEqual(log, [
        {
          target: refs.small,
          inputs: [...inputs],
          dimensions: undefined,
          task: undefined,
          startedAt: 0,
          timeoutMs: 400
        }
      ])
      const [record] = yield* records
      assert.strictEqual(record?.mode, "embed")
      assert.strictEqual(record?.outcome, "success")
      assert.strictEqual(record?.finishReason, "stop")
      assert.deepStrictEqual(record?.evidence, e)
      const stored = JSON.stringify(Schema.encodeSync(Evidence)(e))
      for (const text of inputs) assert.isFalse(stored.includes(text))
      assert.isFalse(stored.includes("0.1,"))
    }).pipe(Effect.provide(layer))
  })

  it.effect("one modelgate.embed span (operation embeddings, vector length, input count), never the texts", () => {
    const { layer } = gateway({ [refs.small]: [vectors(50, 12)] })
    const { spans, tracer } = keepingTracer()
    return Effect.gen(function* () {
      yield* driven(ModelGateway.embed(embedCommand()).pipe(Effect.withTracer(tracer)))
      const calls = spans.filter((s) => s.name === "modelgate.embed")
      assert.strictEqual(calls.length, 1)
      const call = calls[0]!
      assert.strictEqual(call.attributes.get("gen_ai.operation.name"), "embeddings")
      assert.strictEqual(call.attributes.get("modelgate.mode"), "embed")
      assert.strictEqual(call.attributes.get("gen_ai.embeddings.dimension.count"), 4)
      assert.strictEqual(call.attributes.get("modelgate.embedding.inputs"), 2)
      assert.strictEqual(spans.filter((s) => s.name === "modelgate.attempt").length, 1)
      const dumped = JSON.stringify(spans.map((s) => [s.name, [...s.attributes]]))
      for (const text of inputs) assert.isFalse(dumped.includes(text))
    }).pipe(Effect.provide(layer))
  })

  it.effect("falls back on a 503 to the next target of the same space; other spaces are never called", () => {
    const { layer, log } = gateway({ [refs.small]: [overloaded(30)], [refs.azure]: [vectors(40, 12)] })
    return Effect.gen(function* () {
      const result = yield* driven(ModelGateway.embed(embedCommand()))
      assert.strictEqual(result.evidence.target, refs.azure)
      assert.isTrue(result.evidence.fallbackUsed)
      assert.deepStrictEqual(
        result.evidence.attempts.map((a) => [a.target, a.outcome, a.httpStatus, a.startOffsetMs, a.latencyMs]),
        [
          [refs.small, "unavailable", 503, 0, 30],
          [refs.azure, "success", 200, 30, 40]
        ]
      )
      assert.deepStrictEqual(
        log.map((s) => [s.target, s.startedAt]),
        [
          [refs.small, 0],
          [refs.azure, 30]
        ]
      )
      assert.deepStrictEqual(
        result.evidence.excluded.map((x) => [x.target, x.reason]),
        incompatible.map((x) => [x.target, x.reason])
      )
      assert.deepStrictEqual(result.vectors, [vectorOf(0, 4), vectorOf(1, 4)])
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "embedding attempts count in the target's breaker: once open, the call goes to the next target of the space",
    () => {
      const breakers = Health.layerMemory(
        Health.HealthConfig.make({
          breaker: Health.BreakerSettings.make({
            consecutiveFailures: 2,
            failureRatio: 0,
            coolDown: Duration.seconds(10)
          })
        })
      )
      const { layer, log } = gateway(
        { [refs.small]: [overloaded(10), overloaded(10)] },
        Budgets.layerOff,
        definition,
        breakers
      )
      return Effect.gen(function* () {
        yield* driven(ModelGateway.embed(embedCommand()))
        yield* driven(ModelGateway.embed(embedCommand()))
        const third = yield* driven(ModelGateway.embed(embedCommand()))
        assert.strictEqual(third.evidence.target, refs.azure)
        assert.deepStrictEqual(
          third.evidence.excluded.map((x) => [x.target, x.reason]),
          [[refs.small, "BREAKER_OPEN"], ...incompatible.map((x) => [x.target, x.reason])]
        )
        assert.deepStrictEqual(
          log.map((s) => s.target),
          [refs.small, refs.azure, refs.small, refs.azure, refs.azure]
        )
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("a malformed answer (a vector of the wrong length) is billed and falls back", () => {
    const { layer } = gateway({
      [refs.small]: [{ _tag: "Vectors", after: 20, usage: 12, length: 3 }],
      [refs.azure]: [vectors(20, 12)]
    })
    return Effect.gen(function* () {
      const result = yield* driven(ModelGateway.embed(embedCommand()))
      assert.strictEqual(result.evidence.target, refs.azure)
      const [first] = result.evidence.attempts
      assert.strictEqual(first?.outcome, "invalid_output")
      assert.strictEqual(first?.errorTag, "InvalidOutput")
      assert.strictEqual(first?.usage?.inputTokens, 12)
      assert.strictEqual(result.evidence.cost.actual, (24 * 20) / 1_000_000)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a provider that reports no usage is billed the estimated input", () => {
    const { layer } = gateway({ [refs.small]: [vectors(10)] })
    return Effect.gen(function* () {
      const result = yield* driven(ModelGateway.embed(embedCommand()))
      const estimated = TokenEstimator.estimateInput({
        messages: inputs.map((content) => ({ _tag: "user" as const, content }))
      })
      assert.strictEqual(result.evidence.usage.inputTokens, estimated)
      assert.strictEqual(result.evidence.cost.actual, (estimated * 20) / 1_000_000)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a target that shortens vectors is asked for the space's dimensions on the wire; the task travels", () => {
    const { layer, log } = gateway()
    return Effect.gen(function* () {
      const result = yield* driven(ModelGateway.embed(embedCommand({ workflow: "docs.embed8", task: "document" })))
      assert.deepStrictEqual(result.vectors, [vectorOf(0, 8), vectorOf(1, 8)])
      assert.deepStrictEqual(
        log.map((s) => [s.target, s.dimensions, s.task]),
        [[refs.small8, 8, "document"]]
      )
    }).pipe(Effect.provide(layer))
  })

  it.effect(
    "the deadline applies: a slow attempt is cut at its bound, the fallback gets what is left (exact instants)",
    () => {
      // Workflow timeout 1000 ms, command timeout 600 ms; per-attempt timeout 400 ms.
      const { layer, log } = gateway({ [refs.small]: [{ _tag: "Hang" }], [refs.azure]: [{ _tag: "Hang" }] })
      return Effect.gen(function* () {
        const exit = yield* driven(Effect.exit(ModelGateway.embed(embedCommand({ timeout: 600 }))))
        const error = failureOf(exit)
        assert.strictEqual(error?._tag, "DeadlineExceeded")
        if (error?._tag !== "DeadlineExceeded") return
        assert.strictEqual(error.timeoutMs, 600)
        assert.strictEqual(error.elapsedMs, 600)
        assert.deepStrictEqual(
          log.map((s) => [s.target, s.startedAt, s.timeoutMs]),
          [
            [refs.small, 0, 400],
            [refs.azure, 400, 200]
          ]
        )
        assert.deepStrictEqual(
          error.attempts.map((a) => [a.target, a.outcome, a.startOffsetMs, a.latencyMs]),
          [
            [refs.small, "timeout", 0, 400],
            [refs.azure, "timeout", 400, 200]
          ]
        )
        const [record] = yield* records
        assert.strictEqual(record?.mode, "embed")
        assert.strictEqual(record?.errorTag, "DeadlineExceeded")
        assert.deepStrictEqual(record?.evidence.embedding, {
          family: "text-embedding-3-small",
          dimensions: 4,
          inputs: 2
        })
      }).pipe(Effect.provide(layer))
    }
  )

  it.effect("the budget applies: input tokens × input price is reserved and committed, no output", () => {
    const { layer } = gateway(
      { [refs.small]: [vectors(10, 12)] },
      Budgets.layerMemory({ tenants: { acme: { limit: 1 } } })
    )
    return Effect.gen(function* () {
      const result = yield* driven(ModelGateway.embed(embedCommand()))
      const estimated = TokenEstimator.estimateInput({
        messages: inputs.map((content) => ({ _tag: "user" as const, content }))
      })
      // Worst case over the eligible targets: the estimated input at 20 per million, no output.
      assert.strictEqual(result.evidence.cost.estimated, (estimated * 20) / 1_000_000)
      assert.strictEqual(result.evidence.cost.reserved, (estimated * 20) / 1_000_000)
      assert.strictEqual(result.evidence.cost.actual, (12 * 20) / 1_000_000)
      const balance = yield* Effect.flatMap(Budgets.Budgets, (b) => b.balance(TenantId.make("acme")))
      assert.strictEqual(balance.committed, (12 * 20) / 1_000_000)
      assert.strictEqual(balance.reserved, 0)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a budget too small for the input refuses the call before any attempt (exact amounts)", () => {
    const { layer, log } = gateway({}, Budgets.layerMemory({ tenants: { acme: { limit: 0.0001 } } }))
    return Effect.gen(function* () {
      const long = "word ".repeat(2_000)
      const exit = yield* driven(Effect.exit(ModelGateway.embed(embedCommand({ inputs: [long] }))))
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "BudgetExceeded")
      if (error?._tag !== "BudgetExceeded") return
      const estimated = TokenEstimator.estimateInput({ messages: [{ _tag: "user", content: long }] })
      assert.strictEqual(error.limit, 0.0001)
      assert.strictEqual(error.requested, (estimated * 20) / 1_000_000)
      assert.deepStrictEqual(log, [])
    }).pipe(Effect.provide(layer))
  })

  it.effect("inside an agent run: runId and step in the evidence, the run's deadline bounds the call", () => {
    const { layer, log } = gateway({ [refs.small]: [{ _tag: "Hang" }] })
    return Effect.gen(function* () {
      const exit = yield* driven(
        AgentRun.run(
          { runId: "run-e", deadline: 250, tenant: TenantId.make("acme") },
          AgentRun.step(3, Effect.exit(ModelGateway.embed(embedCommand())))
        )
      )
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "DeadlineExceeded")
      assert.deepStrictEqual(
        log.map((s) => [s.target, s.startedAt, s.timeoutMs]),
        [[refs.small, 0, 250]]
      )
      const [record] = yield* records
      assert.strictEqual(record?.evidence.runId, "run-e")
      assert.strictEqual(record?.evidence.step, 3)
    }).pipe(Effect.provide(layer))
  })

  it.effect("an untrusted command is decoded without echoing its texts; unknown fields are refused", () =>
    Effect.gen(function* () {
      const secret = "the confidential text to embed"
      const refused = yield* Effect.flip(
        Embeddings.decodeCommand({ workflow: "docs.embed", tenant: "acme", inputs: [secret, 42], baseUrl: "http://x" })
      )
      assert.isFalse(refused.message.includes(secret))
      assert.isTrue(refused.message.includes("$.inputs.1"))
      assert.isTrue(refused.message.includes("$.baseUrl"))
      const empty = yield* Effect.flip(Embeddings.decodeCommand({ workflow: "docs.embed", tenant: "acme", inputs: [] }))
      assert.isTrue(empty.message.includes("$.inputs"))
      const ok = yield* Embeddings.decodeCommand({ workflow: "docs.embed", tenant: "acme", inputs: [secret] })
      assert.deepStrictEqual(ok.inputs, [secret])
      // hostile shapes are refused before decoding, as for ModelCommand.decodeUnknown
      let deep: unknown = secret
      for (let i = 0; i < 100; i++) deep = [deep]
      const nested = yield* Effect.flip(
        Embeddings.decodeCommand({ workflow: "docs.embed", tenant: "acme", inputs: deep })
      )
      assert.isTrue(nested.message.includes("nested deeper than 64 levels"))
      assert.isFalse(nested.message.includes(secret))
      const exotic = yield* Effect.flip(
        Embeddings.decodeCommand({ workflow: "docs.embed", tenant: "acme", inputs: [secret], extra: new Date(0) })
      )
      assert.isTrue(exotic.message.includes("$.extra: not a plain object"))
    })
  )

  it.effect("embed serves embedding workflows only, and generate never routes to one", () => {
    const { layer, log } = gateway()
    return Effect.gen(function* () {
      const notEmbedding = failureOf(
        yield* driven(Effect.exit(ModelGateway.embed(embedCommand({ workflow: "docs.reply" }))))
      )
      assert.strictEqual(notEmbedding?._tag, "InvalidRequest")
      if (notEmbedding?._tag === "InvalidRequest") assert.strictEqual(notEmbedding.detail, "not an embedding workflow")
      const command = Schema.decodeSync(ModelCommand)({
        workflow: "docs.embed",
        tenant: "acme",
        messages: [{ _tag: "user", content: "hello" }]
      })
      const notGenerate = failureOf(yield* driven(Effect.exit(ModelGateway.generate(command))))
      assert.strictEqual(notGenerate?._tag, "InvalidRequest")
      if (notGenerate?._tag === "InvalidRequest") {
        assert.strictEqual(notGenerate.detail, "an embedding workflow: use embed")
      }
      assert.deepStrictEqual(log, [])
      assert.deepStrictEqual(
        (yield* records).map((r) => [r.mode, r.errorTag]),
        [
          ["embed", "InvalidRequest"],
          ["generate", "InvalidRequest"]
        ]
      )
    }).pipe(Effect.provide(layer))
  })

  it.effect("startup lists every embedding problem of a configuration", () => {
    const priced = decodeTarget({
      ...Schema.encodeSync(ModelTarget)(embeddingTarget("model://oa/priced@eu", "oa", "priced", { dimensions: 4 })),
      pricing: { inputPerMillion: 20, outputPerMillion: 1, pricingVersion: "emb-2026-12" }
    })
    const noEmbed = embeddingTarget("model://plain/te3s@eu", "plain", "text-embedding-3-small", { dimensions: 4 })
    const [small, , , , , chat] = targets
    const def: GatewayConfig.Definition = {
      config: GatewayConfig.GatewayConfig.make({
        targets: [small!, priced, noEmbed, chat!],
        workflows: [
          workflow({ name: "a.embed", route: [refs.small, refs.chat] }),
          workflow({ name: "b.reply", route: [refs.chat, refs.small], embedding: undefined }),
          workflow({ name: "c.embed", route: [refs.small], embedding: { family: "other-family", dimensions: 4 } }),
          workflow({ name: "d.embed", route: [refs.small], degrade: { _tag: "static", value: [] } }),
          workflow({ name: "e.embed", route: [refs.small], shadow: { target: refs.small, share: 0.1 } })
        ]
      })
    }
    const { log } = gateway()
    const plain = ProviderAdapter.layer(
      "plain",
      Effect.succeed({
        generate: () => Effect.dieMessage("unused"),
        stream: () => Stream.dieMessage("unused")
      })
    )
    return Effect.gen(function* () {
      const error = yield* Effect.flip(Effect.scoped(Layer.build(ModelGateway.layer(def))))
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason, p.detail]),
        [
          [
            "targets[1].pricing.outputPerMillion",
            "EMBEDDING_OUTPUT_PRICED",
            "an embedding target bills input only: outputPerMillion must be 0"
          ],
          ["targets[2].provider", "NO_EMBED_ADAPTER", "the adapter of this provider does not implement embed"],
          ["workflows[0].route[1]", "CAPABILITY_MISSING", "missing: embeddings"],
          ["workflows[1].route[1]", "CAPABILITY_MISSING", "an embedding model: no text generation"],
          [
            "workflows[2].route",
            "NO_COMPATIBLE_EMBEDDING_TARGET",
            "no route target produces vectors of other-family/4"
          ],
          ["workflows[3]", "EMBEDDING_WORKFLOW_INVALID", "an embedding workflow cannot have a degraded answer"],
          ["workflows[4]", "EMBEDDING_WORKFLOW_INVALID", "an embedding workflow cannot have shadow traffic"]
        ]
      )
      assert.deepStrictEqual(log, [])
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          embedder("oa", new Map(), log),
          plain,
          Budgets.layerOff,
          Concurrency.layerOff,
          Health.layerOff,
          CallRecorder.layerMemory
        )
      )
    )
  })
})
