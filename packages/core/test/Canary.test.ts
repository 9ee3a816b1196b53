/**
 * Canary assignment (issue 16, item 2 without the controller): a sticky hash of the stickiness key
 * and the canary id puts a share of calls on the candidate side; the candidate leads only when it
 * passes every hard constraint, the baseline route is its fallback, and evidence says which side.
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig } from "@modelgate/core"
import type { Evidence } from "@modelgate/core/ModelResult"
import { TargetRef } from "@modelgate/core/ModelTarget"
import * as Telemetry from "@modelgate/core/Telemetry"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Effect, Exit, Metric } from "effect"
import * as RouterEngine from "../src/internal/router/engine.js"
import { command, gatewayLayer, providers, refs, target, targets, workflow } from "./fixtures.js"
import { candidateRef, keyOn as keyOnCanary } from "./lifecycleFixtures.js"
import { driven, generateExit } from "./virtualTime.js"

const ref = {
  primary: TargetRef.make(refs.primary),
  fallback: TargetRef.make(refs.fallback),
  us: TargetRef.make(refs.us),
  candidate: TargetRef.make(candidateRef)
}
const canary = (fields: { readonly target?: string; readonly share?: number } = {}) => ({
  id: "reply-v2",
  target: fields.target ?? candidateRef,
  share: fields.share ?? 0.05,
  stickiness: "session" as const
})

const definitionWith = (fields: { readonly target?: string; readonly share?: number } = {}) => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: [...targets, target(candidateRef, "vllm", { limits: { maxAttempts: 1 } })],
    workflows: [workflow({ name: "ticket.reply", canary: canary(fields) })]
  }),
  schemas: {}
})

/** The first of `session-0`, `session-1`, … that lands on `side` of the canary. */
const keyOn = (side: "candidate" | "baseline") => keyOnCanary(canary(), side, "session-")

/** Runs `generate` in a fiber and moves virtual time until it is done. */
const run = (cmd: ReturnType<typeof command>, ms = 5_000) => driven(generateExit(cmd), ms)

/** The evidence of a "ticket.reply" call whose session key lands on `side`; the call must succeed. */
const evidenceOn = (side: "candidate" | "baseline") =>
  Effect.map(run(command("ticket.reply", { sessionKey: keyOn(side) })), (exit) => {
    return Exit.isSuccess(exit) ? exit.value.evidence : assert.fail(`the call failed: ${Cause.pretty(exit.cause)}`)
  })

/** The route a call took, as its evidence says: target, why, the canary side, and the eligible targets in order. */
const routeOf = (e: Evidence) => ({
  target: e.target,
  selectionReason: e.selectionReason,
  canary: e.canary,
  eligible: e.eligible
})
/** The workflow's own route, and the route with the candidate leading it. */
const baselineRoute: Omit<ReturnType<typeof routeOf>, "canary"> = {
  target: ref.primary,
  selectionReason: "PINNED_ORDER",
  eligible: [ref.primary, ref.fallback]
}
const candidateRoute: Omit<ReturnType<typeof routeOf>, "canary"> = {
  target: ref.candidate,
  selectionReason: "CANARY",
  eligible: [ref.candidate, ref.primary, ref.fallback]
}

describe("canary assignment", () => {
  it("the same key always lands on the same side", () => {
    const policy = canary()
    for (let i = 0; i < 500; i++) {
      const key = `tenant-${i}`
      const side = RouterEngine.canarySide(policy, key)
      for (let k = 0; k < 3; k++) assert.strictEqual(RouterEngine.canarySide(policy, key), side)
    }
    // another canary id reshuffles the buckets
    const sides = Array.from({ length: 200 }, (_, i) => RouterEngine.canarySide(policy, `k${i}`))
    const other = Array.from({ length: 200 }, (_, i) => RouterEngine.canarySide({ ...policy, id: "other" }, `k${i}`))
    assert.notDeepEqual(sides, other)
  })

  it("over 10,000 generated keys the candidate share is within ±1 % of the share (1 %, 5 %, 20 %)", () => {
    const policy = canary()
    for (const target of [0.01, 0.05, 0.2]) {
      let candidate = 0
      for (let i = 0; i < 10_000; i++) {
        if (RouterEngine.canarySide({ ...policy, share: target }, `session-${i}`) === "candidate") candidate++
      }
      const share = candidate / 10_000
      assert.isTrue(Math.abs(share - target) <= 0.01, `share ${share} for ${target}`)
    }
    // share 1 puts every key on the candidate side
    assert.strictEqual(RouterEngine.canarySide({ ...policy, share: 1 }, "any"), "candidate")
  })

  it("the stickiness key: sessionKey (else call id), tenant, or call id", () => {
    const cmd = command("ticket.reply", { sessionKey: "s-1" })
    assert.strictEqual(RouterEngine.canaryKey({ stickiness: "session" }, cmd, "call-1"), "s-1")
    assert.strictEqual(RouterEngine.canaryKey({ stickiness: "session" }, command("ticket.reply"), "call-1"), "call-1")
    assert.strictEqual(RouterEngine.canaryKey({ stickiness: "tenant" }, cmd, "call-1"), "acme")
    assert.strictEqual(RouterEngine.canaryKey({ stickiness: "call" }, cmd, "call-1"), "call-1")
    assert.strictEqual(RouterEngine.canaryKey({ stickiness: "call" }, cmd, undefined), undefined)
  })
})

describe("canary routing", () => {
  it.effect("on the candidate side the candidate leads; evidence carries the canary id and side", () =>
    Effect.gen(function* () {
      const e = yield* evidenceOn("candidate")
      assert.deepStrictEqual(routeOf(e), { ...candidateRoute, canary: { id: "reply-v2", side: "candidate" } })
      const counted = yield* Metric.value(
        Metric.tagged(
          Metric.tagged(
            Metric.tagged(Telemetry.metrics.canaryAssignments, "workflow", "ticket.reply"),
            "canary",
            "reply-v2"
          ),
          "side",
          "candidate"
        )
      )
      assert.isTrue(counted.count >= 1)
    }).pipe(Effect.provide(gatewayLayer({}, definitionWith())))
  )

  it.effect("on the baseline side the route is unchanged and says baseline", () =>
    Effect.gen(function* () {
      const e = yield* evidenceOn("baseline")
      assert.deepStrictEqual(routeOf(e), { ...baselineRoute, canary: { id: "reply-v2", side: "baseline" } })
    }).pipe(Effect.provide(gatewayLayer({}, definitionWith())))
  )

  it.effect("a candidate that breaks a hard constraint (region) is skipped: the call says baseline", () =>
    Effect.gen(function* () {
      const e = yield* evidenceOn("candidate")
      assert.deepStrictEqual(routeOf(e), {
        ...baselineRoute,
        canary: { id: "reply-v2", side: "baseline", skipped: true }
      })
      assert.deepStrictEqual(
        e.excluded.map((x) => [x.target, x.reason]),
        [[ref.us, "DATA_REGION_MISMATCH"]]
      )
    }).pipe(Effect.provide(gatewayLayer({}, definitionWith({ target: refs.us }))))
  )

  it.effect("the candidate's failure falls back to the baseline route at exact instants", () =>
    Effect.gen(function* () {
      const e = yield* evidenceOn("candidate")
      const log = yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)
      assert.deepStrictEqual(
        log.map((a) => [a.target, a.startedAt]),
        [
          [ref.candidate, 0],
          [ref.primary, 10]
        ]
      )
      assert.strictEqual(e.target, ref.primary)
      assert.strictEqual(e.selectionReason, "CANARY")
      assert.deepStrictEqual(e.canary, { id: "reply-v2", side: "candidate" })
      assert.isTrue(e.fallbackUsed)
      assert.strictEqual(e.startedAt, 0)
      assert.strictEqual(e.totalLatencyMs, 30)
    }).pipe(
      Effect.provide(
        gatewayLayer(
          {
            [candidateRef]: [ScriptedProvider.unavailable({ after: 10 })],
            [ref.primary]: [ScriptedProvider.success({ after: 20, text: "ok" })]
          },
          definitionWith()
        )
      )
    )
  )
})

describe("canary startup validation", () => {
  it("an unknown canary target and a share outside (0, 1] are listed, value-free", () => {
    const problems = (fields: { readonly target?: string; readonly share?: number }) =>
      GatewayConfig.validate(definitionWith(fields), new Set(providers)).map((p) => [p.path, p.reason, p.detail])
    assert.deepStrictEqual(problems({ target: "model://nobody/none@eu", share: 0 }), [
      ["workflows[0].canary.target", "UNKNOWN_TARGET", "no target with this ref"],
      ["workflows[0].canary.share", "INVALID_CANARY_SHARE", "must be within (0, 1]"]
    ])
    assert.deepStrictEqual(problems({ share: 1.5 }), [
      ["workflows[0].canary.share", "INVALID_CANARY_SHARE", "must be within (0, 1]"]
    ])
    assert.deepStrictEqual(problems({ share: 1 }), [])
    assert.deepStrictEqual(problems({}), [])
  })
})
