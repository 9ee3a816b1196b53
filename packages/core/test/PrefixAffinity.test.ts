/**
 * Prompt-prefix affinity (issue 25 item 6): a call whose prompt shares a long prefix with a recent
 * call of the same tenant prefers, within the hard filters and the score, the target that answered
 * it (`PREFIX_AFFINITY`), so the provider's prompt cache is hit; cached input is billed at the
 * cached price and shown in evidence. The affinity never brings back a target a hard constraint or
 * an open breaker excludes, never crosses tenants, and is forgotten after its `ttl`.
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import type { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Schema, TestClock } from "effect"
import { prefixKeys } from "../src/internal/router/prefix.js"
import { command } from "./fixtures.js"
import { routingGateway, routingWorkflow, scoredRefs, scoredRoute, scoredTargets } from "./routingFixtures.js"

const refs = scoredRefs

/** The scored-routing targets, standard billing cached input at a tenth of its input price. */
const targets = () =>
  scoredTargets().map((t) =>
    t.ref !== refs.standard
      ? t
      : Schema.decodeSync(ModelTarget)({
          ...Schema.encodeSync(ModelTarget)(t),
          pricing: { inputPerMillion: 0.8, cachedInputPerMillion: 0.08, outputPerMillion: 3.2, pricingVersion: "p-1" }
        })
  )

const route = scoredRoute

const workflow = (fields: Partial<typeof Workflow.Encoded> & { readonly name: string }) =>
  routingWorkflow({ route, selection: "scored", ...fields })

const definition = (): GatewayConfig.Definition => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: targets(),
    workflows: [
      workflow({ name: "docs", prefixAffinity: { blockCharacters: 256, ttl: 60_000 } }),
      workflow({ name: "docs.plain" })
    ]
  })
})

const layer = () =>
  routingGateway(
    definition(),
    {
      [refs.standard]: [
        ScriptedProvider.success({
          after: 0,
          usage: { inputTokens: 2_000, outputTokens: 100, cachedInputTokens: 1_500 }
        })
      ]
    },
    { health: Health.layerMemory() }
  )

const contract = "Clause. ".repeat(100) // 800 characters: three blocks of 256
const ask = (question: string, extra: Parameters<typeof command>[1] = {}, name = "docs") =>
  command(name, {
    messages: [
      { _tag: "system", content: "You answer questions about the contract below." },
      { _tag: "user", content: `${contract}\n\nQuestion: ${question}` }
    ],
    ...extra
  })

const resolve = (c: ReturnType<typeof command>) => Effect.flatMap(ModelGateway.ModelGateway, (g) => g.router.resolve(c))

/** standard answers the first question (an escalation puts it first): its prompt cache now holds the contract. */
const serveOnStandard = Effect.gen(function* () {
  const gateway = yield* ModelGateway.ModelGateway
  const first = yield* gateway.generate(ask("Who signs?", { escalate: true }))
  assert.strictEqual(first.evidence.target, refs.standard)
  return first
})

describe("prompt-prefix affinity", () => {
  it.effect("a prompt sharing the served prefix prefers its target (PREFIX_AFFINITY); cached input billed cached", () =>
    Effect.gen(function* () {
      // Before anything was served: fast leads on its score.
      assert.strictEqual((yield* resolve(ask("When does it end?"))).decision.selected, refs.fast)
      const first = yield* serveOnStandard
      // 500 uncached at 0.8 + 1,500 cached at 0.08 + 100 out at 3.2, per million
      assert.strictEqual(first.evidence.usage.cachedInputTokens, 1_500)
      assert.closeTo(first.evidence.cost.actual, (500 * 0.8 + 1_500 * 0.08 + 100 * 3.2) / 1e6, 1e-12)
      // Another question on the same contract: standard leads only thanks to its affinity.
      const again = yield* resolve(ask("When does it end?"))
      assert.strictEqual(again.decision.selected, refs.standard)
      assert.strictEqual(again.decision.selectionReason, "PREFIX_AFFINITY")
      assert.deepStrictEqual(
        again.decision.scores?.slice(0, 2).map((s) => [s.target, s.affinity, s.total]),
        [
          [refs.standard, 1, 0.7698],
          [refs.fast, 0, 0.675]
        ]
      )
      // Another document: no shared block, the score decides.
      const other = yield* resolve(
        command("docs", { messages: [{ _tag: "user", content: `${"Other. ".repeat(100)} Question: ?` }] })
      )
      assert.strictEqual(other.decision.selectionReason, "BEST_SCORE")
      assert.strictEqual(other.decision.selected, refs.fast)
      // The same contract for another tenant: the memory is per tenant.
      const tenantB = yield* resolve(ask("When does it end?", { tenant: "globex" }))
      assert.strictEqual(tenantB.decision.selectionReason, "BEST_SCORE")
      assert.strictEqual(tenantB.decision.selected, refs.fast)
      // A workflow without prefixAffinity: none.
      assert.strictEqual((yield* resolve(ask("When does it end?", {}, "docs.plain"))).decision.selected, refs.fast)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("is remembered for its ttl: at 59,999 ms it holds, at 60,000 ms it is forgotten", () =>
    Effect.gen(function* () {
      yield* serveOnStandard
      yield* TestClock.adjust(59_999)
      assert.strictEqual((yield* resolve(ask("When does it end?"))).decision.selectionReason, "PREFIX_AFFINITY")
      yield* TestClock.adjust(1)
      const expired = yield* resolve(ask("When does it end?"))
      assert.strictEqual(expired.decision.selectionReason, "BEST_SCORE")
      assert.strictEqual(expired.decision.selected, refs.fast)
    }).pipe(Effect.provide(layer()))
  )

  it.effect("never overrides a hard constraint, an open breaker or a degraded route; a session comes first", () =>
    Effect.gen(function* () {
      yield* serveOnStandard
      assert.strictEqual((yield* resolve(ask("When does it end?"))).decision.selectionReason, "PREFIX_AFFINITY")
      // A raised minimum class excludes standard: the affinity does not bring it back.
      const high = yield* resolve(ask("When does it end?", { minQualityTier: "high" }))
      assert.notInclude(high.decision.eligible, refs.standard)
      assert.notStrictEqual(high.decision.selectionReason, "PREFIX_AFFINITY")
      // A session that fast served keeps fast (STICKY), whatever the prefix remembers.
      const gateway = yield* ModelGateway.ModelGateway
      const health = yield* Health.Health
      const standard = gateway.router.workflows.get("docs")!.targets.find((t) => t.ref === refs.standard)!
      yield* gateway.generate(command("docs", { sessionKey: "s1", messages: [{ _tag: "user", content: "short" }] }))
      const session = yield* resolve(ask("When does it end?", { sessionKey: "s1" }))
      assert.strictEqual(session.decision.selected, refs.fast)
      assert.notStrictEqual(session.decision.selectionReason, "PREFIX_AFFINITY")
      // standard fails four times: DEGRADED, it loses its affinity and the lead.
      const fail = {
        outcome: "unavailable",
        availabilityFailure: true,
        latencyMs: 100,
        ttftMs: undefined,
        errorTag: "ProviderUnavailable"
      } as const
      for (let i = 0; i < 4; i++) yield* health.record(standard, fail)
      const degraded = yield* resolve(ask("When does it end?"))
      assert.strictEqual(degraded.decision.selected, refs.fast)
      assert.strictEqual(degraded.decision.scores?.find((s) => s.target === refs.standard)?.affinity, 0)
      // A fifth failure opens its breaker: excluded before any score.
      yield* health.record(standard, fail)
      const open = yield* resolve(ask("When does it end?"))
      assert.deepStrictEqual(
        open.decision.excluded.filter((e) => e.target === refs.standard).map((e) => e.reason),
        ["BREAKER_OPEN"]
      )
      assert.strictEqual(open.decision.selected, refs.fast)
    }).pipe(Effect.provide(layer()))
  )

  it("keys: shared blocks share keys, tenants and workflows never do, and no key holds text", () => {
    const keysOf = (question: string, tenant = "acme", workflowName = "docs") =>
      prefixKeys(ask(question, { tenant }), workflowName, tenant, 256)
    const a = keysOf("Who signs?")
    const b = keysOf("When does it end?")
    // ~860 characters with the system prompt: checkpoints at 1 and 2 blocks (256, 512); both shared.
    assert.strictEqual(a.length, 2)
    assert.deepStrictEqual(a, b)
    for (const key of a) assert.match(key, /^\d+:[0-9a-z]+\.[0-9a-z]+$/)
    const other = keysOf("Who signs?", "globex")
    assert.isTrue(other.every((k) => !a.includes(k)))
    assert.isTrue(keysOf("Who signs?", "acme", "docs.plain").every((k) => !a.includes(k)))
    // Shorter than a block: no key.
    assert.deepStrictEqual(
      prefixKeys(command("docs", { messages: [{ _tag: "user", content: "hi" }] }), "docs", "acme", 256),
      []
    )
  })

  it.effect("is a scored-selection term: on an ordered workflow it is a startup problem", () =>
    Effect.gen(function* () {
      const def: GatewayConfig.Definition = {
        config: GatewayConfig.GatewayConfig.make({
          targets: targets(),
          workflows: [routingWorkflow({ name: "ordered", route, prefixAffinity: {} })]
        })
      }
      const problems = GatewayConfig.validate(def, new Set(["openai", "anthropic", "gemini", "vllm"]))
      assert.deepStrictEqual(
        problems.map((p) => [p.path, p.reason]),
        [["workflows[0].prefixAffinity", "PREFIX_AFFINITY_NOT_SCORED"]]
      )
    })
  )
})
