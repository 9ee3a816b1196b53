/**
 * Scored selection reads observed latency and route health (issue 14 items 3 and 5): the latency
 * term from the route's smoothed p95 (TTFT for streams) against the time the call has left, no
 * oscillation under noisy samples (smoothing plus hysteresis, counted in
 * `modelgate.routing.target_switches`), and the health record's status and headroom.
 */
import { assert, describe, it } from "@effect/vitest"
import { Concurrency, GatewayConfig, Health, ModelGateway, Router } from "@modelgate/core"
import { TargetRef } from "@modelgate/core/ModelTarget"
import type { Workflow } from "@modelgate/core/Workflow"
import { Effect, type Layer, Metric, TestClock } from "effect"
import * as RouterEngine from "../src/internal/router/engine.js"
import { command, routeHealth, decodeTarget, decodeWorkflow } from "./fixtures.js"
import { routingGateway } from "./routingFixtures.js"
import { metrics as routerMetrics } from "../src/internal/router/metrics.js"
import { statusOf } from "../src/internal/healthRecord.js"

const refs = {
  a: TargetRef.make("model://openai/a@eu"),
  b: TargetRef.make("model://anthropic/b@eu"),
  slowTier: TargetRef.make("model://vllm/slowtier@eu")
}

const target = (ref: string, provider: string, latency: "fast" | "medium" | "slow") =>
  decodeTarget({
    ref,
    provider,
    model: ref.split("/")[3]!.split("@")[0]!,
    capabilities: { contextWindow: 128_000, maxOutputTokens: 1000, streaming: true },
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { inputPerMillion: 1, outputPerMillion: 4, pricingVersion: "p-1" },
    limits: { maxAttempts: 1, perAttemptTimeout: 5000 },
    classes: { quality: "standard", latency }
  })

const workflow = (
  name: string,
  route: readonly [string, ...Array<string>],
  extra: Partial<typeof Workflow.Encoded> = {}
) =>
  decodeWorkflow({
    name,
    policyVersion: "route-v8",
    prompt: { id: "p", version: "1" },
    route,
    timeout: 10_000,
    regions: ["eu"],
    dataClass: "internal",
    selection: "scored",
    ...extra
  })

const definition = (): GatewayConfig.Definition => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: [
      target(refs.a, "openai", "fast"),
      target(refs.b, "anthropic", "medium"),
      target(refs.slowTier, "vllm", "slow")
    ],
    workflows: [
      workflow("latency", [refs.a, refs.slowTier]),
      workflow("noisy", [refs.a, refs.b]),
      workflow("headroom", [refs.a, refs.b])
    ]
  }),
  schemas: {}
})

const layer = (concurrency: Layer.Layer<Concurrency.Concurrency, unknown> = Concurrency.layerOff) =>
  routingGateway(definition(), {}, { concurrency, health: Health.layerMemory() })

/** Records one successful attempt of `latencyMs` (and `ttftMs`) on `ref`. */
const success = (ref: TargetRef, latencyMs: number, ttftMs?: number) =>
  Effect.gen(function* () {
    const health = yield* Health.Health
    const gateway = yield* ModelGateway.ModelGateway
    const t = [...gateway.router.workflows.values()].flatMap((c) => c.targets).find((x) => x.ref === ref)!
    yield* health.record(t, { outcome: "success", availabilityFailure: false, latencyMs, ttftMs, errorTag: undefined })
  })

const resolve = (name: string, extra: Parameters<typeof command>[1] = {}, mode: "generate" | "stream" = "generate") =>
  Effect.flatMap(ModelGateway.ModelGateway, (g) => g.router.resolve(command(name, extra), mode))

describe("observed latency", () => {
  it.effect("a route whose p95 exceeds the time left loses to a slower-tier route that fits", () =>
    Effect.gen(function* () {
      // Without observations the fast class leads.
      const before = yield* resolve("latency", { timeout: 2500 })
      assert.deepStrictEqual(before.decision.eligible, [refs.a, refs.slowTier])
      yield* success(refs.a, 3000)
      yield* success(refs.slowTier, 1200)
      const after = yield* resolve("latency", { timeout: 2500 })
      assert.deepStrictEqual(after.decision.eligible, [refs.slowTier, refs.a])
      assert.strictEqual(after.decision.selectionReason, "BEST_SCORE")
      assert.deepStrictEqual(
        after.decision.scores?.map((s) => [s.target, s.observedP95Ms, s.latency, s.total]),
        [
          // 1 − 1200/2500 = 0.52; 0.45·0.75 + 0.2·0.52 + 0.15·1 + 0.1·1
          [refs.slowTier, 1200, 0.52, 0.6915],
          // 3000 ≥ 2500: latency 0, ordered after every route that fits
          [refs.a, 3000, 0, 0.5875]
        ]
      )
      // A short deadline puts the fast class first only where its p95 fits.
      const short = yield* resolve("latency", { timeout: 1500 })
      assert.deepStrictEqual(short.decision.eligible, [refs.slowTier, refs.a])
      assert.isUndefined(short.decision.required?.latencyTier)
      // Streams read the time to first token.
      yield* success(refs.a, 3000, 200)
      const stream = yield* resolve("latency", { timeout: 2500 }, "stream")
      assert.strictEqual(stream.decision.selected, refs.a)
      assert.strictEqual(stream.decision.scores?.[0]?.observedP95Ms, 200)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("no oscillation: alternating noisy p95s do not flip the selected target; a real change switches once", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const compiled = gateway.router.workflows.get("noisy")!
      const switches = Metric.tagged(routerMetrics.targetSwitches, "workflow", "noisy")
      const leaders: Array<TargetRef> = []
      const raw: Array<TargetRef> = []
      for (let round = 0; round < 40; round++) {
        const noisy = round % 2 === 0 ? 500 : 1500
        yield* success(refs.a, noisy)
        yield* success(refs.b, 1000)
        leaders.push((yield* resolve("noisy")).decision.selected!)
        // The same samples read raw (each as the p95, no incumbent): the leader flips every round.
        const record = (route: TargetRef, p95: number) =>
          new Health.RouteHealth({
            route,
            at: 0,
            breaker: "closed",
            consecutiveFailures: 0,
            samples: 1,
            successRate: 1,
            latencyP95Ms: p95
          })
        raw.push(
          Router.score(compiled, command("noisy"), compiled.targets, undefined, {
            health: [record(refs.a, noisy), record(refs.b, 1000)]
          }).targets[0]!.ref
        )
      }
      const changes = (xs: ReadonlyArray<TargetRef>) => xs.slice(1).filter((x, i) => x !== xs[i]).length
      assert.strictEqual(changes(raw), 39)
      assert.strictEqual(changes(leaders), 0)
      assert.strictEqual((yield* Metric.value(switches)).count, 0)
      // A lasting change: a is now slow, b fast; the leader moves to b once and stays.
      for (let round = 0; round < 20; round++) {
        yield* success(refs.a, 2500)
        yield* success(refs.b, 300)
        leaders.push((yield* resolve("noisy")).decision.selected!)
      }
      assert.strictEqual(changes(leaders), 1)
      assert.strictEqual(leaders.at(-1), refs.b)
      assert.strictEqual((yield* Metric.value(switches)).count, 1)
    }).pipe(Effect.provide(layer()))
  )
})

describe("health record: status and headroom", () => {
  const record = (fields: Partial<Health.RouteHealth>) => routeHealth(refs.a, fields)

  it("statusOf: HEALTHY at a health score of 0.8 and above, DEGRADED below, UNAVAILABLE when open or out of rate limit", () => {
    assert.strictEqual(statusOf(record({ successRate: 0.8 })), "HEALTHY")
    assert.strictEqual(statusOf(record({ successRate: 0.79 })), "DEGRADED")
    // a half-open breaker halves the score
    assert.strictEqual(statusOf(record({ successRate: 1, breaker: "half_open" })), "DEGRADED")
    assert.strictEqual(statusOf(record({ successRate: 1, breaker: "open" })), "UNAVAILABLE")
    const exhausted = { remainingRequests: 0, limitRequests: 100, reportedAt: 900, resetAt: 1500 }
    assert.strictEqual(statusOf(record({ successRate: 1, rateLimit: exhausted })), "UNAVAILABLE")
    // the reset has passed: no longer counted
    assert.strictEqual(statusOf(record({ successRate: 1, rateLimit: { ...exhausted, resetAt: 1000 } })), "HEALTHY")
    // a 429 without a reset: scored down (× 0.5), not excluded
    assert.strictEqual(
      statusOf(record({ successRate: 1, rateLimit: { remainingRequests: 0, reportedAt: 900 } })),
      "DEGRADED"
    )
    // concurrency headroom: 0.05 of the cap free scores × (0.5 + 0.5·0.05/0.1) = × 0.75
    assert.strictEqual(Health.healthScore(record({ successRate: 1, concurrencyHeadroom: 0.05 })), 0.75)
    assert.strictEqual(Health.healthScore(record({ successRate: 1, concurrencyHeadroom: 0.5 })), 1)
  })

  it.effect("the health service's record carries its status and smoothed p95", () =>
    Effect.gen(function* () {
      yield* success(refs.a, 400, 100)
      yield* success(refs.a, 800, 200)
      const health = yield* Health.Health
      const gateway = yield* ModelGateway.ModelGateway
      const a = gateway.router.workflows.get("headroom")!.targets.find((t) => t.ref === refs.a)!
      const snapshot = yield* health.snapshot(Health.routeKey(a))
      assert.isTrue(snapshot._tag === "Some")
      if (snapshot._tag !== "Some") return
      // mean 400 + (800 − 400)/8 = 450, deviation (|800 − 400|)/4 = 100: p95 450 + 2·100
      assert.strictEqual(snapshot.value.latencyP95SmoothedMs, 650)
      // TTFT: mean 112.5, deviation 25: 162.5
      assert.strictEqual(snapshot.value.ttftP95SmoothedMs, 162.5)
      assert.strictEqual(snapshot.value.status, "HEALTHY")
    }).pipe(Effect.provide(layer()))
  )

  it.effect(
    "UNAVAILABLE is excluded as UNHEALTHY until its rate-limit reset; low concurrency headroom scores down",
    () =>
      Effect.gen(function* () {
        const health = yield* Health.Health
        const gateway = yield* ModelGateway.ModelGateway
        const a = gateway.router.workflows.get("headroom")!.targets.find((t) => t.ref === refs.a)!
        yield* health.record(a, {
          outcome: "rate_limited",
          availabilityFailure: true,
          latencyMs: 10,
          ttftMs: undefined,
          errorTag: "RateLimited",
          rateLimit: { remainingRequests: 0, limitRequests: 100, resetAt: 30_000, reportedAt: 0 }
        })
        const out = yield* gateway.generate(command("headroom"))
        assert.strictEqual(out.evidence.target, refs.b)
        assert.deepStrictEqual(
          out.evidence.excluded.map((e) => [e.target, e.reason, e.detail]),
          [[refs.a, "UNHEALTHY", "rate limit exhausted for 30000 ms"]]
        )
        yield* TestClock.adjust(30_000)
        // after the reset a is eligible again; it is capped at 2 permits and both are held
        const concurrency = yield* Concurrency.Concurrency
        const first = yield* concurrency.acquireTarget(refs.a, Infinity)
        const second = yield* concurrency.acquireTarget(refs.a, Infinity)
        yield* success(refs.a, 10)
        // without the headroom: success rate 1 of 2
        const r = yield* Effect.flatMap(ModelGateway.ModelGateway, (g) => g.router.resolve(command("headroom")))
        assert.deepStrictEqual(r.decision.excluded, [])
        assert.deepStrictEqual(
          r.decision.scores?.map((s) => [s.target, s.health, s.status]),
          [
            // b served the first call
            [refs.b, 1, "HEALTHY"],
            [refs.a, 0.5, "DEGRADED"]
          ]
        )
        const full = yield* RouterEngine.decide(
          gateway.router.workflows,
          { isOpen: health.isOpen, snapshot: health.snapshot, concurrencyHeadroom: concurrency.targetHeadroom },
          command("headroom"),
          "generate",
          false
        )
        // no concurrency headroom left on a: × 0.5; b is uncapped
        assert.deepStrictEqual(
          full.scores?.map((s) => [s.target, s.health, s.status]),
          [
            [refs.b, 1, "HEALTHY"],
            [refs.a, 0.25, "DEGRADED"]
          ]
        )
        first?.release()
        second?.release()
        assert.strictEqual(concurrency.targetHeadroom?.(refs.a), 1)
        assert.isUndefined(concurrency.targetHeadroom?.(refs.b))
      }).pipe(Effect.provide(layer(Concurrency.layerMemory({ permits: 100, targets: { [refs.a]: 2 } }))))
  )
})
