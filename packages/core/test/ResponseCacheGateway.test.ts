import { describe, expect, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { TenantId } from "@modelgate/core/ModelCommand"
import type { ModelResult } from "@modelgate/core/ModelResult"
import { ScriptedProvider } from "@modelgate/testing"
import { Chunk, Effect, Exit, FastCheck as fc, Fiber, Layer, Metric, Stream, TestClock, TestContext } from "effect"
import { Classification, command, providers, refs, targets, workflow } from "./fixtures.js"
import { cacheMetrics } from "../src/internal/metrics.js"

const answer = { category: "billing", confidence: 0.9 } as const

const cachedWorkflows = (promptVersion = "3") => [
  workflow({
    name: "ticket.classify",
    prompt: { id: "ticket.classify.prompt", version: promptVersion },
    output: { schema: "Classification", schemaVersion: "1" },
    cache: { ttl: 600_000, scope: "tenant" }
  }),
  workflow({
    name: "ticket.classifyDegraded",
    output: { schema: "Classification", schemaVersion: "1" },
    degrade: { _tag: "static", value: { category: "other", confidence: 0 } },
    cache: { ttl: 600_000 }
  }),
  workflow({ name: "ticket.reply", cache: { ttl: 600_000 } }),
  workflow({ name: "ticket.uncached", output: { schema: "Classification", schemaVersion: "1" } })
]

const definitionOf = (promptVersion?: string): GatewayConfig.Definition => ({
  config: GatewayConfig.GatewayConfig.make({ targets, workflows: cachedWorkflows(promptVersion) }),
  schemas: { Classification }
})

const ok = (after = 50) =>
  ScriptedProvider.success({ after, value: answer, usage: { inputTokens: 100, outputTokens: 20 } })

/** A provider answering 503 after 10 ms. */
const unavailable = ScriptedProvider.unavailable({ after: 10 })

/** A gateway with a $5 budget for two tenants, an in-memory recorder and scripted providers. */
const layerOf = (
  scripts: ScriptedProvider.Scripts,
  def: GatewayConfig.Definition = definitionOf(),
  budgets: Layer.Layer<Budgets.Budgets, unknown> = Budgets.layerMemory({
    tenants: { acme: { limit: 5 }, globex: { limit: 5 } }
  })
) =>
  ModelGateway.layer(def).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(Layer.mergeAll(budgets, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory))
  )

/** Runs `generate` to its end under the TestClock (`ms` of virtual time). */
const generate = (cmd: ReturnType<typeof command>, ms = 100) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(ModelGateway.generate(cmd))
    yield* TestClock.adjust(ms)
    return yield* Fiber.join(fiber)
  })

const providerCalls = Effect.map(
  Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts),
  (a) => a.length
)
const balance = (tenant: string) => Effect.flatMap(Budgets.Budgets, (b) => b.balance(TenantId.make(tenant)))
const records = Effect.flatMap(CallRecorder.MemoryRecorder, (r) => r.records)

describe("response cache through the gateway", () => {
  it.effect(
    "done when: a repeat is served with zero provider calls and zero spend; another tenant and a prompt bump miss",
    () =>
      Effect.gen(function* () {
        const first = yield* generate(command("ticket.classify"))
        expect(first.evidence.cache).toMatchObject({ hit: false, lookup: "miss", stored: true })
        const spent = (yield* balance("acme")).committed
        expect(spent).toBeGreaterThan(0)
        expect(yield* providerCalls).toBe(1)

        yield* TestClock.adjust(1_000)
        const again = yield* ModelGateway.generate(command("ticket.classify"))
        expect(yield* providerCalls).toBe(1)
        expect(again.content.value).toEqual(answer)
        expect(again.evidence.cache).toEqual({
          hit: true,
          lookup: "hit",
          keyId: first.evidence.cache?.keyId,
          // Stored when the first call answered (t = 50), served at t = 1 100.
          ageMs: 1_050,
          callId: first.evidence.callId,
          bytes: again.evidence.cache?.bytes
        })
        expect(again.evidence.callId).not.toBe(first.evidence.callId)
        // The original call's model and versions; nothing spent, nothing reserved, no attempt.
        expect(again.evidence.model).toBe(first.evidence.model)
        expect(again.evidence.target).toBe(refs.primary)
        expect(again.evidence.promptVersion).toBe("3")
        expect(again.evidence.policyVersion).toBe(first.evidence.policyVersion)
        expect(again.evidence.schemaVersion).toBe("1")
        expect(again.evidence.attempts).toEqual([])
        expect(again.evidence.cost).toMatchObject({ reserved: 0, actual: 0 })
        expect(again.evidence.usage.inputTokens + again.evidence.usage.outputTokens).toBe(0)
        const after = yield* balance("acme")
        expect(after.committed).toBe(spent)
        expect(after.reserved).toBe(0)

        // Another tenant, the same request: the provider is called.
        const other = yield* generate(command("ticket.classify", { tenant: "globex" }))
        expect(other.evidence.cache?.hit).toBe(false)
        expect(yield* providerCalls).toBe(2)

        // One CallRecord per call, the hit marked as one.
        const all = yield* records
        expect(all.map((r) => [r.outcome, r.evidence.cache?.lookup])).toEqual([
          ["success", "miss"],
          ["success", "hit"],
          ["success", "miss"]
        ])
      }).pipe(Effect.provide(layerOf({ [refs.primary]: [ok()] })))
  )

  it.effect("a prompt-version bump misses (reload)", () =>
    Effect.gen(function* () {
      yield* generate(command("ticket.classify"))
      yield* Effect.flatMap(ModelGateway.ModelGateway, (g) => g.reload(definitionOf("4")))
      const bumped = yield* generate(command("ticket.classify"))
      expect(bumped.evidence.cache).toMatchObject({ hit: false, lookup: "miss" })
      expect(bumped.evidence.promptVersion).toBe("4")
      expect(yield* providerCalls).toBe(2)
      // Either version's answer is served to its own version only.
      expect((yield* ModelGateway.generate(command("ticket.classify"))).evidence.cache?.hit).toBe(true)
      expect(yield* providerCalls).toBe(2)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ok()] })))
  )

  it.effect("an entry is served until its TTL, exactly (TestClock)", () =>
    Effect.gen(function* () {
      yield* generate(command("ticket.classify"), 50) // stored at t=50
      yield* TestClock.adjust(600_000 - 1) // t = 600 049
      expect((yield* ModelGateway.generate(command("ticket.classify"))).evidence.cache?.ageMs).toBe(599_999)
      yield* TestClock.adjust(1) // t = 600 050: expired
      const fresh = yield* generate(command("ticket.classify"), 50)
      expect(fresh.evidence.cache).toMatchObject({ hit: false, lookup: "miss", stored: true })
      expect(yield* providerCalls).toBe(2)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ok()] })))
  )

  it.effect("bypass neither reads nor stores; refresh skips the read and stores the new answer", () =>
    Effect.gen(function* () {
      yield* generate(command("ticket.classify"))
      const bypassed = yield* generate(command("ticket.classify", { cache: "bypass" }))
      expect(bypassed.evidence.cache).toEqual({ hit: false, lookup: "bypass" })
      expect(yield* providerCalls).toBe(2)
      const refreshed = yield* generate(command("ticket.classify", { cache: "refresh" }))
      expect(refreshed.evidence.cache).toMatchObject({ hit: false, lookup: "refresh", stored: true })
      expect(yield* providerCalls).toBe(3)
      const hit = yield* ModelGateway.generate(command("ticket.classify"))
      expect(hit.evidence.cache?.callId).toBe(refreshed.evidence.callId)
      expect(yield* providerCalls).toBe(3)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ok()] })))
  )

  it.effect("a command offering a side-effecting tool is neither read nor stored", () =>
    Effect.gen(function* () {
      const tools = [
        { name: "close_ticket", description: "Closes", parameters: { type: "object" }, sideEffecting: true }
      ]
      yield* generate(command("ticket.reply", { tools }))
      const second = yield* generate(command("ticket.reply", { tools }))
      expect(second.evidence.cache).toEqual({ hit: false, lookup: "bypass" })
      expect(yield* providerCalls).toBe(2)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ScriptedProvider.success({ after: 10, text: "done" })] })))
  )

  it.effect("failed and degraded answers are not cached", () =>
    Effect.gen(function* () {
      const degraded = yield* generate(command("ticket.classifyDegraded"), 1_000)
      expect(degraded.evidence.degraded).toBe(true)
      expect(degraded.evidence.cache).toMatchObject({ hit: false, stored: false })
      const failed = yield* Effect.exit(generate(command("ticket.classify"), 1_000))
      expect(Exit.isFailure(failed)).toBe(true)
      // Nothing was stored: each repeat calls the providers again.
      const before = yield* providerCalls
      const again = yield* generate(command("ticket.classifyDegraded"), 1_000)
      expect(again.evidence.cache).toMatchObject({ hit: false, lookup: "miss", stored: false })
      const between = yield* providerCalls
      expect(between).toBeGreaterThan(before)
      expect(Exit.isFailure(yield* Effect.exit(generate(command("ticket.classify"), 1_000)))).toBe(true)
      expect(yield* providerCalls).toBeGreaterThan(between)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [unavailable], [refs.fallback]: [unavailable] })))
  )

  it.effect("single flight: concurrent identical requests make one provider call", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Effect.all(
          Array.from({ length: 6 }, () => ModelGateway.generate(command("ticket.classify"))),
          { concurrency: "unbounded" }
        )
      )
      yield* TestClock.adjust(50)
      const results = yield* Fiber.join(fiber)
      expect(yield* providerCalls).toBe(1)
      expect(results.map((r) => r.evidence.cache?.lookup).sort()).toEqual(["hit", "hit", "hit", "hit", "hit", "miss"])
      expect(results.every((r) => r.evidence.totalLatencyMs === 50)).toBe(true)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ok(50)] })))
  )

  it.effect("a hit never crosses tenants (property: random tenants, identical requests)", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,11}$/), { minLength: 2, maxLength: 5 }),
          fc.array(fc.nat({ max: 4 }), { minLength: 1, maxLength: 12 }),
          (tenants, order) =>
            Effect.runPromise(
              Effect.gen(function* () {
                const servedBy = new Map<string, string>()
                for (const i of order) {
                  const tenant = tenants[i % tenants.length]!
                  const r: ModelResult = yield* generate(command("ticket.classify", { tenant }))
                  const cache = r.evidence.cache
                  if (cache?.hit === true) {
                    // A hit is the answer of a call by the same tenant.
                    expect(servedBy.get(cache.callId ?? "")).toBe(tenant)
                  } else {
                    servedBy.set(r.evidence.callId, tenant)
                  }
                }
                const distinct = new Set(order.map((i) => tenants[i % tenants.length]))
                expect(yield* providerCalls).toBe(distinct.size)
              }).pipe(
                Effect.provide(layerOf({ [refs.primary]: [ok()] }, definitionOf(), Budgets.layerOff)),
                Effect.provide(TestContext.TestContext)
              )
            )
        ),
        { numRuns: 25 }
      )
    )
  )

  it.effect("a workflow without cache neither reads nor writes (no cache evidence)", () =>
    Effect.gen(function* () {
      yield* generate(command("ticket.uncached"))
      const second = yield* generate(command("ticket.uncached"))
      expect(second.evidence.cache).toBeUndefined()
      expect(yield* providerCalls).toBe(2)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ok()] })))
  )

  it.effect("a stream served from the cache replays as a stream, ending with Final", () =>
    Effect.gen(function* () {
      const first = yield* generate(command("ticket.classify"))
      const events = yield* Stream.runCollect(ModelGateway.stream(command("ticket.classify")))
      const tags = Chunk.toReadonlyArray(events).map((e) => e._tag)
      expect(tags).toEqual(["TextDelta", "PartialObject", "UsageReported", "Final"])
      const [delta, partial, , final] = Chunk.toReadonlyArray(events)
      expect(delta?._tag === "TextDelta" ? delta.text : undefined).toBe(first.content.text)
      expect(partial?._tag === "PartialObject" ? partial.value : undefined).toEqual(answer)
      expect(final?._tag === "Final" ? final.result.evidence.cache?.hit : undefined).toBe(true)
      expect(yield* providerCalls).toBe(1)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ok()] })))
  )

  it.effect("the cache metrics count lookups and bytes by workflow and outcome", () =>
    Effect.gen(function* () {
      const counter = (m: typeof cacheMetrics.lookups, outcome: string) =>
        Effect.map(
          Metric.value(m.pipe(Metric.tagged("workflow", "ticket.reply"), Metric.tagged("outcome", outcome))),
          (state) => state.count
        )
      const before = {
        miss: yield* counter(cacheMetrics.lookups, "miss"),
        hit: yield* counter(cacheMetrics.lookups, "hit"),
        served: yield* counter(cacheMetrics.bytes, "served"),
        stored: yield* counter(cacheMetrics.bytes, "stored")
      }
      const miss = yield* generate(command("ticket.reply"))
      const hit = yield* ModelGateway.generate(command("ticket.reply"))
      const bytes = hit.evidence.cache?.bytes ?? 0
      expect(bytes).toBeGreaterThan(0)
      expect(miss.evidence.cache?.bytes).toBe(bytes)
      expect((yield* counter(cacheMetrics.lookups, "miss")) - before.miss).toBe(1)
      expect((yield* counter(cacheMetrics.lookups, "hit")) - before.hit).toBe(1)
      expect((yield* counter(cacheMetrics.bytes, "served")) - before.served).toBe(bytes)
      expect((yield* counter(cacheMetrics.bytes, "stored")) - before.stored).toBe(bytes)
    }).pipe(Effect.provide(layerOf({ [refs.primary]: [ScriptedProvider.success({ after: 10, text: "Thanks!" })] })))
  )
})
