/**
 * Shadow calls are ordinary attempts (issue 26, findings 4 and 5): bounded by their candidate's
 * timeout (a hung candidate is cut at that instant, its slot and reservation come back, later
 * shadow calls run), their reservation settled on every exit (an adapter that throws), and
 * admitted through the candidate's concurrency cap and provider rate limit at once or dropped and
 * counted — never more in flight than the cap, never more requests than the limit. Virtual time.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Budgets,
  CallRecorder,
  Concurrency,
  GatewayConfig,
  Health,
  ModelGateway,
  RateLimitStore,
  Shadow
} from "@modelgate/core"
import { TenantId } from "@modelgate/core/ModelCommand"
import { Usage } from "@modelgate/core/ModelResult"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Fiber, Layer, Stream } from "effect"
import { Classification, command, refs, target, targets, workflow } from "./fixtures.js"
import { at, candidateRef } from "./lifecycleFixtures.js"
import { dropped, shadowRecords } from "./shadowFixtures.js"

/** What the candidate does with one request. */
type Step = { readonly _tag: "Answer"; readonly after: number } | { readonly _tag: "Hang" } | { readonly _tag: "Throw" }

/** The candidate's adapter: follows `steps` (then answers after 300 ms), counting requests in flight. */
const candidate = (steps: Array<Step>) => {
  const seen = { requests: 0, inFlight: 0, maxInFlight: 0, startedAt: [] as Array<number> }
  const adapter: ProviderAdapter.ProviderAdapter = {
    provider: "vllm",
    generate: (request) => {
      const step = steps.shift() ?? { _tag: "Answer", after: 300 }
      // An adapter with a bug: it throws instead of returning an Effect.
      if (step._tag === "Throw") throw new Error("adapter bug")
      return Effect.gen(function* () {
        seen.requests++
        seen.inFlight++
        seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight)
        seen.startedAt.push(yield* Effect.clockWith((c) => c.currentTimeMillis))
        if (step._tag === "Hang") return yield* Effect.never
        yield* Effect.sleep(step.after)
        return {
          text: JSON.stringify({ category: "billing", confidence: 0.5 }),
          toolCalls: [],
          finishReason: "stop" as const,
          refusal: false,
          usage: new Usage({ inputTokens: 100, outputTokens: 20 }),
          modelVersion: undefined,
          requestId: undefined,
          httpStatus: 200
        }
      }).pipe(Effect.ensuring(Effect.sync(() => seen.inFlight--)), Effect.annotateLogs("target", request.target.ref))
    },
    stream: () => Stream.empty
  }
  return { seen, layer: ProviderAdapter.layer("vllm", Effect.succeed(adapter)) }
}

const primaryAnswers = Array.from({ length: 40 }, () =>
  ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 0.9 } })
)

const definition = (options: { readonly maxConcurrent?: number; readonly candidate?: ModelTarget } = {}) => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: [...targets, options.candidate ?? target(candidateRef, "vllm")],
    workflows: [
      workflow({
        name: "ticket.classify",
        output: { schema: "Classification", schemaVersion: "1" },
        shadow: { target: candidateRef, share: 1, maxConcurrent: options.maxConcurrent ?? 10 }
      }),
      // Real callers of the candidate.
      workflow({
        name: "candidate.direct",
        output: { schema: "Classification", schemaVersion: "1" },
        route: [candidateRef]
      })
    ]
  }),
  schemas: { Classification }
})

const layer = (
  def: GatewayConfig.Definition,
  vllm: Layer.Layer<ProviderAdapter.ProviderAdapter>,
  services: {
    readonly budgets?: Layer.Layer<Budgets.Budgets, unknown>
    readonly concurrency?: Layer.Layer<Concurrency.Concurrency, unknown>
  } = {}
) =>
  ModelGateway.layer(def).pipe(
    Layer.provideMerge(
      Layer.merge(
        ScriptedProvider.layer({
          providers: ["openai", "anthropic", "gemini"],
          scripts: { [refs.primary]: primaryAnswers }
        }),
        vllm
      )
    ),
    Layer.provideMerge(
      Layer.mergeAll(
        services.budgets ?? Budgets.layerOff,
        services.concurrency ?? Concurrency.layerOff,
        Health.layerOff,
        CallRecorder.layerMemory,
        Shadow.layerMemory,
        RateLimitStore.layerMemory
      )
    )
  )

/** Starts one call of `workflow` in its own fiber. */
const start = (workflow = "ticket.classify") =>
  Effect.flatMap(ModelGateway.ModelGateway, (g) => Effect.fork(g.generate(command(workflow))))

const shadowTenant = TenantId.make("shadow")
const budgets = Budgets.layerMemory({ tenants: { acme: { limit: 10 }, shadow: { limit: 1 } } })

describe("shadow calls are ordinary attempts", () => {
  it.effect("a hung candidate is cut at exactly its timeout; its slot and reservation come back", () => {
    const { layer: vllm } = candidate([{ _tag: "Hang" }])
    return Effect.gen(function* () {
      const b = yield* Budgets.Budgets
      const loadBefore = yield* dropped("load")
      const first = yield* start()
      // The primary answers at 10; the shadow call starts then and hangs.
      yield* at(409)
      yield* Fiber.join(first)
      assert.deepStrictEqual(yield* shadowRecords, [])
      assert.isTrue((yield* b.balance(shadowTenant)).reserved > 0)
      // The candidate's perAttemptTimeout is 400 ms: cut at 10 + 400.
      yield* at(410)
      const [cut] = yield* shadowRecords
      assert.deepStrictEqual([cut?.outcome, cut?.startedAt, cut?.latencyMs], ["timeout", 10, 400])
      const balance = yield* b.balance(shadowTenant)
      assert.strictEqual(balance.reserved, 0)
      // Sent and cut: its input is committed.
      assert.isTrue(cut!.cost > 0)
      assert.strictEqual(balance.committed, cut!.cost)
      // The slot came back (maxConcurrent 1): the next call is shadowed, answered at 420 + 300.
      yield* Fiber.join(yield* start().pipe(Effect.tap(() => at(720))))
      const records = yield* shadowRecords
      assert.deepStrictEqual(
        records.map((r) => [r.outcome, r.startedAt, r.latencyMs]),
        [
          ["timeout", 10, 400],
          ["success", 420, 300]
        ]
      )
      assert.strictEqual((yield* dropped("load")) - loadBefore, 0)
      assert.strictEqual((yield* b.balance(shadowTenant)).reserved, 0)
    }).pipe(Effect.provide(layer(definition({ maxConcurrent: 1 }), vllm, { budgets })))
  })

  it.effect("a candidate adapter that throws: the call is recorded failed and its reservation settled", () => {
    const { layer: vllm } = candidate([{ _tag: "Throw" }])
    return Effect.gen(function* () {
      const b = yield* Budgets.Budgets
      yield* Fiber.join(yield* start().pipe(Effect.tap(() => at(100))))
      const records = yield* shadowRecords
      assert.deepStrictEqual(
        records.map((r) => [r.outcome, r.startedAt]),
        [["failed", 10]]
      )
      const balance = yield* b.balance(shadowTenant)
      assert.strictEqual(balance.reserved, 0)
      assert.strictEqual(balance.committed, records[0]!.cost)
      // The slot came back too.
      yield* Fiber.join(yield* start().pipe(Effect.tap(() => at(500))))
      assert.deepStrictEqual(
        (yield* shadowRecords).map((r) => r.outcome),
        ["failed", "success"]
      )
    }).pipe(Effect.provide(layer(definition({ maxConcurrent: 1 }), vllm, { budgets })))
  })

  it.effect("a candidate capped at 1: never more than 1 in flight counting shadow calls; drops counted", () => {
    const { seen, layer: vllm } = candidate([])
    return Effect.gen(function* () {
      const before = yield* dropped("concurrency")
      // A real caller of the candidate holds its one permit from 0 to 300.
      const direct = yield* start("candidate.direct")
      // Three sampled calls answered at 10: their shadow calls find the permit taken.
      const calls = yield* Effect.all([start(), start(), start()])
      yield* at(200)
      assert.strictEqual((yield* dropped("concurrency")) - before, 3)
      yield* at(300)
      yield* Fiber.join(direct)
      // Free again at 300: one of three calls at 300 is shadowed (answered at 310, until 610).
      const later = yield* Effect.all([start(), start(), start()])
      yield* at(1_000)
      yield* Effect.forEach([...calls, ...later], Fiber.join)
      assert.strictEqual(seen.maxInFlight, 1)
      assert.deepStrictEqual(seen.startedAt, [0, 310])
      assert.deepStrictEqual(
        (yield* shadowRecords).map((r) => [r.outcome, r.startedAt]),
        [["success", 310]]
      )
      assert.strictEqual((yield* dropped("concurrency")) - before, 5)
      const snapshot = yield* Effect.flatMap(Concurrency.Concurrency, (c) => c.snapshot)
      assert.strictEqual(snapshot.targets.get(candidateRef)?.inUse ?? 0, 0)
    }).pipe(
      Effect.provide(
        layer(definition(), vllm, {
          concurrency: Concurrency.layerMemory({ permits: 100, targets: { [candidateRef]: 1 } })
        })
      )
    )
  })

  it.effect("a candidate limited to 6 requests a minute: shadow traffic never exceeds it; drops counted", () => {
    const limited = new ModelTarget({ ...target(candidateRef, "vllm"), rateLimit: { requestsPerMinute: 6 } })
    const { seen, layer: vllm } = candidate([])
    return Effect.gen(function* () {
      const before = yield* dropped("rate_limit")
      // Ten sampled calls within the first minute, 5 s apart.
      const fibers = []
      for (let i = 0; i < 10; i++) {
        fibers.push(yield* start())
        yield* at((i + 1) * 5_000)
      }
      yield* Effect.forEach(fibers, Fiber.join)
      assert.strictEqual(seen.requests, 6)
      assert.strictEqual((yield* shadowRecords).length, 6)
      assert.strictEqual((yield* dropped("rate_limit")) - before, 4)
      // A real caller of the candidate in the same minute is skipped (the limit is spent), not sent.
      const direct = yield* Effect.exit(Fiber.join(yield* start("candidate.direct")))
      assert.strictEqual(seen.requests, 6)
      assert.isTrue(direct._tag === "Failure")
    }).pipe(Effect.provide(layer(definition({ candidate: limited }), vllm)))
  })
})
