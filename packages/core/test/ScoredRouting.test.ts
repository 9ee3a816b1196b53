/**
 * Scored selection under hard constraints (issue 14, first slice): registry classes and verified
 * quality, risk, minimum quality class, the weighted score, short deadlines, deprecated targets and
 * determinism (spec T8). The default `ordered` selection keeps route order.
 */
import { assert, describe, it } from "@effect/vitest"
import { type GatewayConfig, Health, ModelGateway, Router } from "@modelgate/core"
import { ModelTarget, TargetRef } from "@modelgate/core/ModelTarget"
import { qualityRank } from "../src/internal/targetSchemas.js"
import { RouteDecision } from "@modelgate/core/RouteDecision"
import type { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import {
  Clock,
  Effect,
  Either,
  Exit,
  FastCheck as fc,
  Fiber,
  Logger,
  LogLevel,
  Option,
  Schema,
  TestClock
} from "effect"
import * as FastPath from "../src/internal/fastPath.js"
import * as RouterEngine from "../src/internal/router/engine.js"
import { driven } from "./virtualTime.js"
import { capturingLogger, command, gatewayLayer, exclusionsOf, routeHealth } from "./fixtures.js"
import {
  closedBreakers,
  compiledScored,
  generatedTargets,
  routingGateway,
  routingDefinition,
  routingWorkflow,
  scoredRefs,
  scoredRoute,
  scoredTargets,
  verified
} from "./routingFixtures.js"

const refs = { ...scoredRefs, twin: TargetRef.make("model://openai/twin@eu") }

/** Fresh target values each time (the deprecated warning is once per target value). */
const makeTargets = scoredTargets

const route = scoredRoute

const workflow = (fields: Partial<typeof Workflow.Encoded> & { readonly name: string }) =>
  routingWorkflow({ route, ...fields })

const makeDefinition = (): GatewayConfig.Definition =>
  routingDefinition(makeTargets(), [
    workflow({ name: "ordered" }),
    workflow({ name: "scored", selection: "scored" }),
    workflow({ name: "scored.standard", selection: "scored", minQualityTier: "standard" }),
    workflow({ name: "scored.high", selection: "scored", risk: "HIGH" }),
    workflow({ name: "ordered.high", risk: "HIGH", qualityThreshold: 0.75 }),
    workflow({ name: "scored.quality", selection: "scored", scoring: { weights: { quality: 0.9 } } }),
    workflow({ name: "scored.noPenalty", selection: "scored", scoring: { deprecatedPenalty: 0 } }),
    workflow({ name: "scored.single", selection: "scored", allowFallback: false }),
    workflow({ name: "ordered.single", allowFallback: false })
  ])

const layer = () => gatewayLayer({}, makeDefinition())

/** The scored workflow's first pick (fast) fails at 10 ms; standard answers 20 ms later. */
const fallbackLayer = () =>
  gatewayLayer(
    {
      [refs.fast]: [ScriptedProvider.unavailable({ after: 10 })],
      [refs.standard]: [ScriptedProvider.success({ after: 20 })]
    },
    makeDefinition()
  )

const resolve = (name: string, extra: Parameters<typeof command>[1] = {}) =>
  Effect.flatMap(ModelGateway.ModelGateway, (g) => g.router.resolve(command(name, extra)))

const totals = (decision: RouteDecision) => decision.scores?.map((s) => [s.target, s.total])

const reasons = (decision: RouteDecision) => decision.excluded.map((e) => [e.target, e.reason, e.detail])

describe("scored selection", () => {
  it.effect("ordered (the default): route order, PINNED_ORDER, no scores", () =>
    Effect.gen(function* () {
      const r = yield* resolve("ordered")
      assert.deepStrictEqual(r.decision.eligible, route)
      assert.strictEqual(r.decision.selected, refs.strong)
      assert.strictEqual(r.decision.selectionReason, "PINNED_ORDER")
      assert.isUndefined(r.decision.scores)
      assert.deepStrictEqual(r.decision.excluded, [])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("scored: the best-scoring eligible target leads and the fallback order follows the score", () =>
    Effect.gen(function* () {
      const r = yield* resolve("scored")
      // prices are counted: ~input tokens and the 1000-token output cap; the cheap fast target wins
      assert.deepStrictEqual(r.decision.eligible, [refs.fast, refs.standard, refs.strong, refs.old])
      assert.strictEqual(r.decision.selectionReason, "BEST_SCORE")
      const [fast, standard, strong, old] = r.decision.scores ?? []
      assert.deepInclude(fast, { quality: 0.5, latency: 1, cost: 1, health: 1, affinity: 0, penalty: 0, total: 0.675 })
      // verified score on the segment, not the class
      assert.deepInclude(standard, { quality: 0.78, latency: 0.6, health: 1, penalty: 0 })
      assert.deepInclude(strong, { quality: 0.93, latency: 0.3, penalty: 0 })
      // no verified score on "extract": the class (high, 0.9), minus the deprecated penalty
      assert.deepInclude(old, { quality: 0.9, latency: 0.6, penalty: 0.2 })
      const ts = (r.decision.scores ?? []).map((s) => s.total)
      assert.deepStrictEqual(
        ts,
        [...ts].sort((a, b) => b - a)
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("Router.score without a token count: prices per million, exact terms and totals", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const compiled = gateway.router.workflows.get("scored")!
      const ranked = Router.score(compiled, command("scored"), compiled.targets, undefined)
      assert.strictEqual(ranked.reason, "BEST_SCORE")
      // cost: cheapest (0.5 per million in + out) over own: 0.5/15, 0.5/4, 1, 0.5/5
      assert.deepStrictEqual(
        ranked.scores.map((s) => [s.target, s.quality, s.latency, s.cost, s.penalty, s.total]),
        [
          // 0.45·0.5 + 0.2·1 + 0.15·1 + 0.1
          [refs.fast, 0.5, 1, 1, 0, 0.675],
          // 0.45·0.78 + 0.2·0.6 + 0.15·0.125 + 0.1
          [refs.standard, 0.78, 0.6, 0.125, 0, 0.5898],
          // 0.45·0.93 + 0.2·0.3 + 0.15·0.0333 + 0.1
          [refs.strong, 0.93, 0.3, 0.0333, 0, 0.5835],
          // 0.45·0.9 + 0.2·0.6 + 0.15·0.1 + 0.1 − 0.2
          [refs.old, 0.9, 0.6, 0.1, 0.2, 0.44]
        ]
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("preferredTier: quality fit falls 0.1 per class of distance from the preferred class", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const compiled = gateway.router.workflows.get("scored")!
      const ranked = Router.score(compiled, command("scored", { preferredTier: "low" }), compiled.targets, undefined)
      assert.deepStrictEqual(
        ranked.scores.map((s) => [s.target, s.quality]),
        [
          [refs.fast, 0.5],
          [refs.standard, 0.68],
          [refs.strong, 0.73],
          [refs.old, 0.7]
        ]
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("risk HIGH keeps only targets with a verified score at or above the threshold on the segment", () =>
    Effect.gen(function* () {
      const r = yield* resolve("scored.high")
      assert.deepStrictEqual(r.decision.eligible, [refs.strong])
      assert.strictEqual(r.decision.selectionReason, "ONLY_ELIGIBLE")
      assert.deepStrictEqual(reasons(r.decision), [
        [refs.standard, "QUALITY_UNVERIFIED", "verified 0.78 on segment extract, below 0.8"],
        [refs.fast, "QUALITY_UNVERIFIED", "no verified score on segment extract"],
        [refs.old, "QUALITY_UNVERIFIED", "no verified score on segment extract"]
      ])
      // ordered too, with the workflow's own threshold; a command can raise the risk, never lower it
      const ordered = yield* resolve("ordered.high", { risk: "LOW" })
      assert.deepStrictEqual(ordered.decision.eligible, [refs.strong, refs.standard])
      const raised = yield* resolve("ordered", { risk: "HIGH" })
      assert.deepStrictEqual(raised.decision.eligible, [refs.strong])
      // a segment without any verified score: nothing is eligible
      const other = yield* Effect.flip(resolve("scored.high", { segment: "classify" }))
      assert.strictEqual(other._tag, "NoEligibleRoute")
      // an inherited name is no verified score
      const inherited = yield* Effect.flip(resolve("scored.high", { segment: "constructor" }))
      assert.strictEqual(inherited._tag, "NoEligibleRoute")
    }).pipe(Effect.provide(layer()))
  )

  it.effect("minQualityTier excludes lower classes (BELOW_MIN_TIER); a command may raise it", () =>
    Effect.gen(function* () {
      const r = yield* resolve("scored.standard")
      assert.deepStrictEqual(r.decision.eligible, [refs.standard, refs.strong, refs.old])
      assert.deepStrictEqual(reasons(r.decision), [[refs.fast, "BELOW_MIN_TIER", "quality low below standard"]])
      const high = yield* resolve("scored.standard", { minQualityTier: "high" })
      assert.deepStrictEqual(high.decision.eligible, [refs.strong, refs.old])
      const lower = yield* resolve("scored.standard", { minQualityTier: "low" })
      assert.deepStrictEqual(lower.decision.eligible, [refs.standard, refs.strong, refs.old])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a short deadline puts the fast latency class first (required.latencyTier fast)", () =>
    Effect.gen(function* () {
      const slow = yield* resolve("scored.quality")
      assert.strictEqual(slow.decision.selected, refs.strong)
      assert.strictEqual(slow.decision.selectionReason, "BEST_SCORE")
      assert.isUndefined(slow.decision.required?.latencyTier)
      const short = yield* resolve("scored.quality", { timeout: 1500 })
      assert.strictEqual(short.decision.selected, refs.fast)
      assert.strictEqual(short.decision.selectionReason, "BEST_SCORE")
      assert.strictEqual(short.decision.required?.latencyTier, "fast")
      // the rest keep their score order
      assert.deepStrictEqual(
        short.decision.eligible.slice(1),
        slow.decision.eligible.filter((t) => t !== refs.fast)
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("allowFallback false: only the best-scoring target stays eligible", () =>
    Effect.gen(function* () {
      const r = yield* resolve("scored.single")
      assert.deepStrictEqual(r.decision.eligible, [refs.fast])
      assert.strictEqual(r.decision.selectionReason, "BEST_SCORE")
      assert.deepStrictEqual(
        r.decision.scores?.map((s) => s.target),
        [refs.fast, refs.standard, refs.strong, refs.old]
      )
      const ordered = yield* resolve("ordered.single")
      assert.deepStrictEqual(ordered.decision.eligible, [refs.strong])
      assert.strictEqual(ordered.decision.selectionReason, "PINNED_ORDER")
      assert.deepStrictEqual(exclusionsOf(r.decision), [
        [refs.standard, "FALLBACK_NOT_ALLOWED"],
        [refs.strong, "FALLBACK_NOT_ALLOWED"],
        [refs.old, "FALLBACK_NOT_ALLOWED"]
      ])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("spec T8: the same inputs and control-plane state produce the same route decision", () =>
    Effect.gen(function* () {
      const encode = Schema.encodeSync(RouteDecision)
      const first = yield* resolve("scored", { timeout: 5000 })
      const again = yield* resolve("scored", { timeout: 5000 })
      const fresh = yield* resolve("scored", { timeout: 5000 }).pipe(Effect.provide(layer()))
      assert.deepStrictEqual(encode(again.decision), encode(first.decision))
      assert.deepStrictEqual(encode(fresh.decision), encode(first.decision))
      // the decision's id is the same for the same decision, another for another one
      assert.match(first.decision.routeId ?? "", /^route-[0-9a-f]{8}$/)
      const other = yield* resolve("scored", { timeout: 1500 })
      assert.notStrictEqual(other.decision.routeId, first.decision.routeId)
      assert.deepStrictEqual(first.decision.required, {
        tools: false,
        vision: false,
        streaming: false,
        structuredOutput: false,
        regions: ["eu"],
        dataClass: "internal",
        risk: "LOW",
        segment: "extract",
        contextTokens: first.decision.estimatedInputTokens
      })
      // ties keep route order: two identical targets score the same
      const gateway = yield* ModelGateway.ModelGateway
      const compiled = gateway.router.workflows.get("scored")!
      const [a] = compiled.targets
      const twin = ModelTarget.make({ ...a!, ref: refs.twin })
      const ranked = Router.score(compiled, command("scored"), [a!, twin], undefined)
      assert.deepStrictEqual(
        ranked.scores.map((s) => [s.target, s.total]),
        [
          [refs.strong, ranked.scores[0]!.total],
          [refs.twin, ranked.scores[0]!.total]
        ]
      )
      const swapped = Router.score(compiled, command("scored"), [twin, a!], undefined)
      assert.deepStrictEqual(
        swapped.targets.map((t) => t.ref),
        [refs.twin, refs.strong]
      )
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a deprecated target is eligible, scored down, and warned about once", () =>
    Effect.gen(function* () {
      const { logs, layer: logging } = capturingLogger()
      const penalised = yield* resolve("scored").pipe(Effect.provide(logging))
      const unpenalised = yield* resolve("scored.noPenalty").pipe(Effect.provide(logging))
      yield* resolve("ordered").pipe(Effect.provide(logging))
      const totalOf = (d: RouteDecision) => d.scores?.find((s) => s.target === refs.old)?.total
      assert.isTrue(penalised.decision.eligible.includes(refs.old))
      assert.strictEqual(totalOf(penalised.decision), 0.44)
      assert.strictEqual(totalOf(unpenalised.decision), 0.64)
      assert.deepStrictEqual(logs, [
        ["WARN", "modelgate: routing to a deprecated target", { target: refs.old, workflow: "scored" }]
      ])
      assert.deepStrictEqual(totals(penalised.decision)?.at(-1), [refs.old, 0.44])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("a call falls back in score order; evidence carries the reason and the scores", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const fiber = yield* Effect.fork(
        gateway
          .generate(command("scored"))
          .pipe(Effect.flatMap((result) => Effect.map(Clock.currentTimeMillis, (at) => ({ result, at }))))
      )
      yield* TestClock.adjust(100)
      const done = yield* Fiber.poll(fiber)
      assert.isTrue(Option.isSome(done), "call did not finish in time")
      const { result, at } = yield* Fiber.join(fiber)
      assert.strictEqual(at, 30)
      const e = result.evidence
      assert.deepStrictEqual(
        e.attempts.map((a) => [a.target, a.startOffsetMs, a.outcome]),
        [
          [refs.fast, 0, "unavailable"],
          [refs.standard, 10, "success"]
        ]
      )
      assert.strictEqual(e.target, refs.standard)
      assert.strictEqual(e.selectionReason, "BEST_SCORE")
      assert.deepStrictEqual(
        e.scores?.map((s) => s.target),
        [refs.fast, refs.standard, refs.strong, refs.old]
      )
    }).pipe(Effect.provide(fallbackLayer()))
  )
})

/** The gateway with in-memory route health (`Health.layerMemory`) instead of the noop. */
const memoryLayer = () => routingGateway(makeDefinition(), {}, { health: Health.layerMemory() })

/** Records attempts on a target of the `scored` workflow (the breaker stays closed under 5 in a row). */
const recordOn = (ref: TargetRef, outcomes: ReadonlyArray<"success" | "unavailable">) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const health = yield* Health.Health
    const target = gateway.router.workflows.get("scored")!.targets.find((t) => t.ref === ref)!
    for (const outcome of outcomes) {
      yield* health.record(target, {
        outcome,
        availabilityFailure: outcome !== "success",
        latencyMs: 100,
        ttftMs: undefined,
        errorTag: outcome === "success" ? undefined : "ProviderUnavailable"
      })
    }
  })

describe("scored selection: health, escalation, affinity", () => {
  it.effect("health: a failing route scores down (DEGRADED) and loses the lead; ordered selection ignores it", () =>
    Effect.gen(function* () {
      yield* recordOn(refs.fast, ["unavailable", "unavailable", "unavailable", "unavailable"])
      yield* recordOn(refs.standard, ["success"])
      const r = yield* resolve("scored")
      assert.strictEqual(r.decision.selectionReason, "BEST_SCORE")
      assert.deepStrictEqual(
        r.decision.scores?.map((s) => [s.target, s.health, s.status, s.total]),
        [
          // its one success took 100 ms: latency 1 − 100/10000 = 0.99 (observed, not the class)
          // 0.45·0.78 + 0.2·0.99 + 0.15·0.125 + 0.1·1
          [refs.standard, 1, "HEALTHY", 0.6678],
          [refs.strong, 1, undefined, 0.5835],
          // 0.45·0.5 + 0.2·1 + 0.15·1 + 0.1·0 (success rate 0 of 4)
          [refs.fast, 0, "DEGRADED", 0.575],
          [refs.old, 1, undefined, 0.44]
        ]
      )
      const ordered = yield* resolve("ordered")
      assert.deepStrictEqual(ordered.decision.eligible, route)
      assert.strictEqual(ordered.decision.selectionReason, "PINNED_ORDER")
      assert.isUndefined(ordered.decision.scores)
    }).pipe(Effect.provide(memoryLayer()))
  )

  it("RouterEngine.healthOf: success rate, half-open breaker, low rate-limit headroom until its reset", () => {
    const record = (fields: Partial<Health.RouteHealth>) => routeHealth(refs.fast, fields)
    assert.strictEqual(RouterEngine.healthOf(record({ samples: 0 })), 1)
    assert.strictEqual(RouterEngine.healthOf(record({ successRate: 0.9 })), 0.9)
    assert.strictEqual(RouterEngine.healthOf(record({ successRate: 0.9, breaker: "half_open" })), 0.45)
    // headroom 2/100 = 0.02 < 0.1: × (0.5 + 0.5·0.02/0.1) = × 0.6
    const low = { remainingRequests: 2, limitRequests: 100, reportedAt: 900, resetAt: 2000 }
    assert.strictEqual(RouterEngine.healthOf(record({ successRate: 0.9, rateLimit: low })), 0.54)
    // a 429 without headers: nothing left, × 0.5
    assert.strictEqual(
      RouterEngine.healthOf(record({ successRate: 1, rateLimit: { remainingRequests: 0, reportedAt: 900 } })),
      0.5
    )
    // reset already passed: no penalty
    assert.strictEqual(RouterEngine.healthOf(record({ successRate: 0.9, rateLimit: { ...low, resetAt: 1000 } })), 0.9)
    // plenty of headroom: no penalty
    const plenty = { remainingTokens: 50_000, limitTokens: 100_000, reportedAt: 900 }
    assert.strictEqual(RouterEngine.healthOf(record({ successRate: 0.9, rateLimit: plenty })), 0.9)
  })

  it.effect("spec T6: stronger-tier selection follows the escalation signal and the hard filters", () =>
    Effect.gen(function* () {
      // Without the signal the low-class fast target leads; with it, the stronger classes come first.
      const plain = yield* resolve("scored")
      assert.strictEqual(plain.decision.selected, refs.fast)
      const escalated = yield* resolve("scored", { escalate: true })
      assert.strictEqual(escalated.decision.selectionReason, "ESCALATION")
      assert.deepStrictEqual(escalated.decision.escalation, {
        signal: "command",
        from: refs.fast,
        fromTier: "low",
        to: refs.standard,
        toTier: "standard"
      })
      assert.deepStrictEqual(escalated.decision.eligible, [refs.standard, refs.strong, refs.old, refs.fast])
      assert.deepStrictEqual(totals(escalated.decision), [
        [refs.standard, 0.5898],
        [refs.strong, 0.5835],
        [refs.old, 0.44],
        [refs.fast, 0.675]
      ])
      // Same hard filters: a raised minimum class still excludes fast; stronger than standard is high.
      const raised = yield* resolve("scored", { escalate: true, minQualityTier: "standard" })
      assert.strictEqual(raised.decision.selectionReason, "ESCALATION")
      assert.deepStrictEqual(raised.decision.eligible, [refs.strong, refs.old, refs.standard])
      assert.deepStrictEqual(reasons(raised.decision), [[refs.fast, "BELOW_MIN_TIER", "quality low below standard"]])
      // risk HIGH: only the verified strong target passes; nothing stronger, nothing excluded is used.
      const high = yield* resolve("scored.high", { escalate: true })
      // nothing stronger: the order stays and the escalation has no target
      assert.strictEqual(high.decision.selectionReason, "ONLY_ELIGIBLE")
      assert.deepStrictEqual(high.decision.escalation, { signal: "command", from: refs.strong, fromTier: "high" })
      assert.deepStrictEqual(high.decision.eligible, [refs.strong])
      assert.deepStrictEqual(exclusionsOf(high.decision), [
        [refs.standard, "QUALITY_UNVERIFIED"],
        [refs.fast, "QUALITY_UNVERIFIED"],
        [refs.old, "QUALITY_UNVERIFIED"]
      ])
      // ordered: the primary is already of the strongest class
      const ordered = yield* resolve("ordered", { escalate: true })
      assert.strictEqual(ordered.decision.selectionReason, "PINNED_ORDER")
      assert.isUndefined(ordered.decision.escalation?.to)
      assert.deepStrictEqual(ordered.decision.eligible, route)
      // allowFallback false: the escalated target is the only one kept
      const single = yield* resolve("scored.single", { escalate: true })
      assert.deepStrictEqual(single.decision.eligible, [refs.standard])
      assert.deepStrictEqual(exclusionsOf(single.decision), [
        [refs.strong, "FALLBACK_NOT_ALLOWED"],
        [refs.old, "FALLBACK_NOT_ALLOWED"],
        [refs.fast, "FALLBACK_NOT_ALLOWED"]
      ])
    }).pipe(Effect.provide(layer()))
  )

  it.effect("affinity: a session sticks to the target that served it (STICKY) while it is healthy", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const serve = (extra: Parameters<typeof command>[1]) => gateway.generate(command("scored", extra))
      // The escalated follow-up is served by standard (0 ms: latency 1); the session remembers it.
      const first = yield* serve({ sessionKey: "s1", escalate: true })
      assert.strictEqual(first.evidence.target, refs.standard)
      // A decision alone (resolve) remembers nothing: only a call's serving target does.
      yield* resolve("scored", { sessionKey: "s9", escalate: true })
      assert.strictEqual((yield* resolve("scored", { sessionKey: "s9" })).decision.selectionReason, "BEST_SCORE")
      // standard 0.6698 + 0.1 affinity beats fast 0.675; without it fast would lead: STICKY.
      const sticky = yield* resolve("scored", { sessionKey: "s1" })
      assert.strictEqual(sticky.decision.selectionReason, "STICKY")
      assert.deepStrictEqual(
        sticky.decision.scores?.slice(0, 2).map((s) => [s.target, s.affinity, s.total]),
        [
          [refs.standard, 1, 0.7698],
          [refs.fast, 0, 0.675]
        ]
      )
      // another session is not affected
      const other = yield* resolve("scored", { sessionKey: "s2" })
      assert.strictEqual(other.decision.selected, refs.fast)
      assert.strictEqual(other.decision.selectionReason, "BEST_SCORE")
      // standard fails: DEGRADED, it loses its affinity (sticky only while healthy) and the lead
      yield* recordOn(refs.standard, ["unavailable", "unavailable", "unavailable", "unavailable"])
      const yielded = yield* resolve("scored", { sessionKey: "s1" })
      assert.strictEqual(yielded.decision.selected, refs.fast)
      assert.strictEqual(yielded.decision.selectionReason, "BEST_SCORE")
      assert.deepStrictEqual(yielded.decision.scores?.find((s) => s.target === refs.standard)?.affinity, 0)
      // the call is served by fast: the session now follows fast, which leads on its own
      const served = yield* serve({ sessionKey: "s1" })
      assert.strictEqual(served.evidence.target, refs.fast)
      const after = yield* resolve("scored", { sessionKey: "s1" })
      assert.strictEqual(after.decision.selectionReason, "BEST_SCORE")
      assert.deepStrictEqual(
        after.decision.scores?.map((s) => [s.target, s.affinity]),
        [
          [refs.fast, 1],
          // one success of five: health 0.2 (0.45·0.78 + 0.2·1 + 0.15·0.125 + 0.1·0.2 = 0.5898)
          [refs.standard, 0],
          [refs.strong, 0],
          [refs.old, 0]
        ]
      )
    }).pipe(Effect.provide(memoryLayer()))
  )

  it.effect("affinity follows the target that finally served the call, after a fallback", () =>
    Effect.gen(function* () {
      const result = yield* driven(ModelGateway.generate(command("scored", { sessionKey: "s1" })), 100)
      // fast was the decision's first pick; it failed and standard served
      assert.strictEqual(result.evidence.eligible[0], refs.fast)
      assert.strictEqual(result.evidence.target, refs.standard)
      const next = yield* resolve("scored", { sessionKey: "s1" })
      assert.strictEqual(next.decision.selected, refs.standard)
      assert.strictEqual(next.decision.selectionReason, "STICKY")
    }).pipe(Effect.provide(fallbackLayer()))
  )

  it.effect("affinity in Router.score: a sticky target far behind does not lead; the map is bounded", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const compiled = gateway.router.workflows.get("scored")!
      const ranked = Router.score(compiled, command("scored"), compiled.targets, undefined, { sticky: refs.old })
      assert.strictEqual(ranked.reason, "BEST_SCORE")
      assert.deepStrictEqual(ranked.scores.at(-1), {
        target: refs.old,
        quality: 0.9,
        latency: 0.6,
        cost: 0.1,
        health: 1,
        affinity: 1,
        penalty: 0.2,
        total: 0.54
      })
      // A router of its own (its own state): LRU of RouterEngine.maxSessionKeys keys.
      const workflows = RouterEngine.routed(new Map([["scored", compiled]]))
      const breakers = closedBreakers
      const decide = (extra: Parameters<typeof command>[1]) =>
        RouterEngine.decide(workflows, breakers, command("scored", extra), "generate", false)
      RouterEngine.rememberServed(workflows, "scored", "s0", refs.standard)
      for (let i = 1; i < RouterEngine.maxSessionKeys; i++)
        RouterEngine.rememberServed(workflows, "scored", `k${i}`, refs.fast)
      assert.strictEqual((yield* decide({ sessionKey: "s0" })).selectionReason, "STICKY")
      for (let i = 0; i < RouterEngine.maxSessionKeys; i++)
        RouterEngine.rememberServed(workflows, "scored", `m${i}`, refs.fast)
      const forgotten = yield* decide({ sessionKey: "s0" })
      assert.strictEqual(forgotten.selectionReason, "BEST_SCORE")
      assert.strictEqual(forgotten.eligible[0], refs.fast)
      // Health answered synchronously (the noop's: breakers closed, no records, on the view's private
      // fast path) keeps the decision synchronous: no fiber step. A record to ask of a store does not.
      const settledView = FastPath.attach(
        { ...breakers, snapshot: () => Effect.succeed(Option.none<Health.RouteHealth>()) },
        { _tag: "Health", isOpen: () => false, noRecords: true }
      )
      const pendingView = FastPath.attach(
        { ...breakers, snapshot: () => Effect.sync(() => Option.none<Health.RouteHealth>()) },
        { _tag: "Health", isOpen: () => false }
      )
      assert.isTrue(Exit.isExit(RouterEngine.decide(workflows, settledView, command("scored"), "generate", false)))
      const pending = RouterEngine.decide(workflows, pendingView, command("scored"), "generate", false)
      assert.isFalse(Exit.isExit(pending))
      assert.deepStrictEqual((yield* pending).eligible, forgotten.eligible)
      // Health off (the real layer) answers on its fast path: synchronous, the same decision.
      const off = yield* Effect.provide(Health.Health, Health.layerOff)
      const viaOff = RouterEngine.decide(workflows, off, command("scored"), "generate", false)
      assert.isTrue(Exit.isExit(viaOff))
      assert.deepStrictEqual((yield* viaOff).eligible, forgotten.eligible)
      // An answer that is only an already-settled Effect is not peeked at: it runs (a fiber step),
      // with the same decision.
      const plainView = { ...breakers, snapshot: () => Effect.succeed(Option.none<Health.RouteHealth>()) }
      const viaPlain = RouterEngine.decide(workflows, plainView, command("scored"), "generate", false)
      assert.isFalse(Exit.isExit(viaPlain))
      assert.deepStrictEqual((yield* viaPlain).eligible, forgotten.eligible)
    }).pipe(Effect.provide(layer()))
  )
})

describe("scored selection over generated registries", () => {
  it("large routes: the order is the total descending, ties in route order (counting and radix sorts)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 60 }), fc.nat(3)), {
          minLength: 33,
          maxLength: 400
        }),
        fc.constantFrom(0.15, 1),
        (specs, weight) => {
          const tiers = [undefined, "low", "standard", "high"] as const
          const targets = generatedTargets(specs, ([input, output, tier]) => ({
            pricing: { inputPerMillion: input / 10, outputPerMillion: output / 10, pricingVersion: "p-1" },
            classes: tiers[tier] === undefined ? {} : { quality: tiers[tier], latency: tier === 1 ? "fast" : "slow" }
          }))
          // weight 1 on every term spreads the totals over 0..5: the radix path
          const compiled = compiledScored("big", targets, {
            scoring: { weights: { quality: weight, latency: weight, cost: weight, health: weight, affinity: weight } }
          })
          const ranked = Router.score(compiled, command("big"), targets, undefined)
          const expected = ranked.scores
            .map((s) => ({ s, at: targets.findIndex((t) => t.ref === s.target) }))
            .sort((a, b) => b.s.total - a.s.total || a.at - b.at)
            .map((x) => x.s.target)
          assert.deepStrictEqual(
            ranked.scores.map((s) => s.target),
            expected
          )
          assert.deepStrictEqual(
            ranked.targets.map((t) => t.ref),
            expected
          )
        }
      ),
      { numRuns: 60 }
    )
  })

  const tier = fc.constantFrom(undefined, "low" as const, "standard" as const, "high" as const)
  const genTarget = fc.record({
    quality: tier,
    latency: fc.constantFrom(undefined, "fast" as const, "medium" as const, "slow" as const),
    price: fc.tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 40 })),
    status: fc.constantFrom("active" as const, "deprecated" as const, "disabled" as const),
    verified: fc.option(
      fc.integer({ min: 0, max: 100 }).map((n) => n / 100),
      { nil: undefined }
    )
  })
  const genCase = fc.record({
    targets: fc.array(genTarget, { minLength: 1, maxLength: 6 }),
    workflowRisk: fc.constantFrom(undefined, "LOW" as const, "MEDIUM" as const, "HIGH" as const),
    commandRisk: fc.constantFrom(undefined, "LOW" as const, "HIGH" as const),
    workflowMin: tier,
    commandMin: tier,
    segment: fc.constantFrom(undefined, "extract"),
    allowFallback: fc.boolean(),
    timeout: fc.integer({ min: 100, max: 10_000 })
  })

  it("the order never breaks a hard constraint, follows the score and is the same on a second decision", () => {
    fc.assert(
      fc.property(genCase, (c) => {
        const targets = generatedTargets(c.targets, (g) => ({
          pricing: { inputPerMillion: g.price[0], outputPerMillion: g.price[1], pricingVersion: "p-1" },
          classes: {
            ...(g.quality ? { quality: g.quality } : {}),
            ...(g.latency ? { latency: g.latency } : {})
          },
          ...(g.verified !== undefined ? { quality: { extract: verified(g.verified) } } : {}),
          status: g.status
        }))
        const compiled = compiledScored("gen", targets, {
          allowFallback: c.allowFallback,
          ...(c.workflowRisk ? { risk: c.workflowRisk } : {}),
          ...(c.workflowMin ? { minQualityTier: c.workflowMin } : {}),
          ...(c.segment ? { segment: c.segment } : {})
        })
        const cmd = command("gen", {
          timeout: c.timeout,
          ...(c.commandRisk ? { risk: c.commandRisk } : {}),
          ...(c.commandMin ? { minQualityTier: c.commandMin } : {})
        })
        const decideOnce = () =>
          Effect.runSync(
            Effect.either(
              RouterEngine.decide(new Map([["gen", compiled]]), closedBreakers, cmd, "generate", false)
            ).pipe(Logger.withMinimumLogLevel(LogLevel.None))
          )
        const first = decideOnce()
        const second = decideOnce()
        const high = c.workflowRisk === "HIGH" || c.commandRisk === "HIGH"
        const mins = [c.workflowMin, c.commandMin].flatMap((t) => (t === undefined ? [] : [qualityRank(t)]))
        const min = mins.length === 0 ? undefined : Math.max(...mins)
        const allowed = (t: ModelTarget) =>
          t.status !== "disabled" &&
          (min === undefined || (t.qualityTier !== undefined && qualityRank(t.qualityTier) >= min)) &&
          (!high ||
            (c.segment !== undefined && (t.quality?.extract?.score ?? -1) >= RouterEngine.defaultQualityThreshold))
        const expected = targets.filter(allowed)
        if (Either.isLeft(first)) {
          assert.strictEqual(expected.length, 0)
          assert.deepStrictEqual(second, first)
          return
        }
        const route = first.right
        assert.isTrue(Either.isRight(second))
        if (Either.isRight(second)) {
          assert.deepStrictEqual(second.right.eligible, route.eligible)
          assert.deepStrictEqual(second.right.scores, route.scores)
          assert.strictEqual(second.right.selectionReason, route.selectionReason)
        }
        // every eligible target passes every hard constraint, and every passing one is scored
        for (const t of route.targets) assert.isTrue(allowed(t))
        assert.deepStrictEqual([...(route.scores ?? [])].map((s) => s.target).sort(), expected.map((t) => t.ref).sort())
        assert.strictEqual(route.eligible.length, c.allowFallback ? expected.length : 1)
        // score order, ties in route order; a short deadline puts fast targets first
        const scores = route.scores ?? []
        const short = c.timeout < 2000
        const fast = (ref: string) => targets.find((t) => t.ref === ref)?.classes?.latency === "fast"
        const anyFast = scores.some((s) => fast(s.target))
        const key = (s: (typeof scores)[number]) => [short && anyFast && fast(s.target) ? 1 : 0, s.total] as const
        for (let i = 1; i < scores.length; i++) {
          const [ga, ta] = key(scores[i - 1]!)
          const [gb, tb] = key(scores[i]!)
          const before = targets.findIndex((t) => t.ref === scores[i - 1]!.target)
          const after = targets.findIndex((t) => t.ref === scores[i]!.target)
          assert.isTrue(ga > gb || (ga === gb && (ta > tb || (ta === tb && before < after))))
        }
      }),
      { numRuns: 300 }
    )
  })
})
