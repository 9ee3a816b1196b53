/**
 * Model lifecycle (issue 16): a new model version started as a canary on reload (`onNewVersion:
 * "canary"`, spec T7), policy and prompt canaries (evidence says which version served), and the
 * startup checks of canaries and shadows.
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { Effect, Fiber, TestClock } from "effect"
import { command, gatewayLayer, providers, refs, targets, workflow } from "./fixtures.js"
import { keyOn } from "./lifecycleFixtures.js"

/** Runs one call and moves time until it is done. */
const run = (cmd: ReturnType<typeof command>) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const fiber = yield* Effect.fork(gateway.generate(cmd))
    yield* TestClock.adjust(1_000)
    return (yield* Fiber.join(fiber)).evidence
  })

/** The fixtures' targets with the primary's pinned model set to `model`. */
const targetsWith = (model: string) =>
  targets.map((t) => (t.ref === refs.primary ? new ModelTarget({ ...t, model }) : t))

const versioned = (model: string): GatewayConfig.Definition => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: targetsWith(model),
    workflows: [
      workflow({ name: "ticket.reply", onNewVersion: "canary", newVersionCanary: { share: 0.5 } }),
      workflow({ name: "ticket.other" })
    ]
  }),
  schemas: {}
})

describe("model versions", () => {
  it.effect("spec T7: registry/model version changes create the expected route/canary behaviour", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const id = "new-version:small-2026-12"
      const candidateKey = keyOn({ id, share: 0.5 }, "candidate")
      const baselineKey = keyOn({ id, share: 0.5 }, "baseline")
      // Before: one version, no canary.
      const before = yield* run(command("ticket.reply", { sessionKey: candidateKey }))
      assert.deepStrictEqual([before.target, before.model, before.canary], [refs.primary, "small", undefined])
      // A reload gives the primary a new model version.
      yield* gateway.reload(versioned("small-2026-12"))
      // Opted in: the new version is a canary of the old one, by the sticky hash.
      const candidate = yield* run(command("ticket.reply", { sessionKey: candidateKey }))
      assert.deepStrictEqual(
        [candidate.target, candidate.model, candidate.selectionReason, candidate.canary],
        [refs.primary, "small-2026-12", "CANARY", { id, side: "candidate" }]
      )
      const baseline = yield* run(command("ticket.reply", { sessionKey: baselineKey }))
      assert.deepStrictEqual(
        [baseline.target, baseline.model, baseline.canary],
        [refs.primary, "small", { id, side: "baseline" }]
      )
      // Not opted in: every call switches to the new version.
      const other = yield* run(command("ticket.other", { sessionKey: baselineKey }))
      assert.deepStrictEqual([other.model, other.canary], ["small-2026-12", undefined])
      // The same configuration again keeps the canary (the old version stays the baseline).
      yield* gateway.reload(versioned("small-2026-12"))
      const again = yield* run(command("ticket.reply", { sessionKey: baselineKey }))
      assert.deepStrictEqual([again.model, again.canary?.side], ["small", "baseline"])
      // Back to the old version: no canary, the old version for everyone.
      yield* gateway.reload(versioned("small"))
      const reverted = yield* run(command("ticket.reply", { sessionKey: candidateKey }))
      assert.deepStrictEqual([reverted.model, reverted.canary], ["small", undefined])
      // The same decision, the same inputs: deterministic.
      const decision = yield* gateway.router.resolve(command("ticket.reply", { sessionKey: candidateKey }))
      assert.deepStrictEqual<ReadonlyArray<string>>(decision.eligible, [refs.primary, refs.fallback])
    }).pipe(Effect.provide(gatewayLayer({}, versioned("small"))))
  )
})

const policyCanary = {
  config: GatewayConfig.GatewayConfig.make({
    targets,
    workflows: [
      workflow({
        name: "ticket.reply",
        canary: { id: "policy-8", policyVersion: "policy-8", route: [refs.fallback], share: 0.5, stickiness: "session" }
      }),
      workflow({
        name: "ticket.other",
        canary: { id: "prompt-4", promptVersion: "4", share: 0.5, stickiness: "tenant" }
      })
    ]
  }),
  schemas: {}
}

describe("policy and prompt canaries", () => {
  it.effect("the candidate side runs the candidate policy; evidence says which policy version served", () =>
    Effect.gen(function* () {
      const candidate = yield* run(
        command("ticket.reply", { sessionKey: keyOn({ id: "policy-8", share: 0.5 }, "candidate") })
      )
      assert.deepStrictEqual(
        [candidate.policyVersion, candidate.target, candidate.canary],
        ["policy-8", refs.fallback, { id: "policy-8", side: "candidate" }]
      )
      const baseline = yield* run(
        command("ticket.reply", { sessionKey: keyOn({ id: "policy-8", share: 0.5 }, "baseline") })
      )
      assert.deepStrictEqual(
        [baseline.policyVersion, baseline.target, baseline.canary],
        ["policy-7", refs.primary, { id: "policy-8", side: "baseline" }]
      )
    }).pipe(Effect.provide(gatewayLayer({}, policyCanary)))
  )

  it.effect("a prompt canary records the candidate prompt version; the router tells the caller the side first", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const sides = new Set<string>()
      for (const tenant of ["acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka"]) {
        const cmd = command("ticket.other", { tenant })
        // Before composing the prompt, the caller asks which side its tenant is on.
        const decided = yield* gateway.router.resolve(cmd)
        const evidence = yield* run(cmd)
        assert.deepStrictEqual(evidence.canary, decided.canary)
        assert.strictEqual(evidence.promptVersion, decided.canary?.side === "candidate" ? "4" : "3")
        assert.strictEqual(evidence.policyVersion, "policy-7")
        sides.add(decided.canary?.side ?? "none")
      }
      assert.deepStrictEqual([...sides].sort(), ["baseline", "candidate"])
    }).pipe(Effect.provide(gatewayLayer({}, policyCanary)))
  )
})

describe("lifecycle startup validation", () => {
  it("a canary without a candidate, steps that do not rise, unknown targets: every problem listed", () => {
    const def: GatewayConfig.Definition = {
      config: GatewayConfig.GatewayConfig.make({
        targets,
        workflows: [
          workflow({
            name: "ticket.reply",
            canary: {
              id: "c",
              share: 0.1,
              stickiness: "call",
              route: ["model://nobody/none@eu"],
              rollout: { steps: [0.5, 0.25], window: 1000 }
            },
            shadow: { target: "model://nobody/shadow@eu", share: 0.1 }
          })
        ]
      }),
      schemas: {}
    }
    assert.deepStrictEqual(
      GatewayConfig.validate(def, new Set(providers)).map((p) => [p.path, p.reason]),
      [
        ["workflows[0].canary.route[0]", "UNKNOWN_TARGET"],
        ["workflows[0].canary", "CANARY_WITHOUT_CANDIDATE"],
        ["workflows[0].canary.rollout.steps", "INVALID_CANARY_STEPS"],
        ["workflows[0].shadow.target", "UNKNOWN_TARGET"]
      ]
    )
  })
})
