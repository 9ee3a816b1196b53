/**
 * Shadow traffic (issue 16, item 3): the caller's answer, instant and evidence are the same with
 * shadow on and off; the shadow call runs off the caller's path and ends in a content-free
 * ShadowRecord; never with side-effecting tools, never outside the call's regions, bounded in
 * concurrency (dropped under load) and charged to its own budget tenant.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Budgets from "@modelgate/core/Budgets"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import * as Health from "@modelgate/core/Health"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import * as Shadow from "@modelgate/core/Shadow"
import type * as ModelResult from "@modelgate/core/ModelResult"
import { TenantId } from "@modelgate/core/ModelCommand"
import { Usage } from "@modelgate/core/ModelResult"
import { Capabilities, ModelTarget } from "@modelgate/core/ModelTarget"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { ScriptedProvider } from "@modelgate/testing"
import { Clock, Effect, Layer, Stream, TestContext } from "effect"
import { Classification, command, providers, refs, servicesOff, target, targets, workflow } from "./fixtures.js"
import { candidateRef, concurrently } from "./lifecycleFixtures.js"
import * as ShadowSample from "../src/internal/shadowSample.js"
import { dropped, shadowRecords } from "./shadowFixtures.js"

const definition = (shadow: { readonly target?: string; readonly maxConcurrent?: number } | undefined) => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: [...targets, target(candidateRef, "vllm")],
    workflows: [
      workflow({
        name: "ticket.classify",
        output: { schema: "Classification", schemaVersion: "1" },
        regions: ["eu", "us"],
        ...(shadow === undefined
          ? {}
          : { shadow: { target: shadow.target ?? candidateRef, share: 1, maxConcurrent: shadow.maxConcurrent ?? 4 } })
      })
    ]
  }),
  schemas: { Classification }
})

const scripts: ScriptedProvider.Scripts = {
  [refs.primary]: [ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 0.9 } })],
  [candidateRef]: [ScriptedProvider.success({ after: 300, value: { category: "billing", confidence: 0.4 } })],
  [refs.us]: [ScriptedProvider.success({ after: 300, value: { category: "billing", confidence: 0.9 } })]
}

const layer = (
  def: GatewayConfig.Definition,
  budgets: Layer.Layer<Budgets.Budgets, unknown> = Budgets.layerOff,
  scripted: ScriptedProvider.Scripts = scripts
) =>
  ModelGateway.layer(def).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts: scripted })),
    Layer.provideMerge(
      Layer.mergeAll(budgets, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory, Shadow.layerMemory)
    )
  )

/** Forks one call per command; each yields its result and the instant the caller got it. */
const answers = (commands: ReadonlyArray<ReturnType<typeof command>>, ms = 2_000) =>
  Effect.flatMap(ModelGateway.ModelGateway, (gateway) =>
    concurrently(
      commands.map((cmd) =>
        Effect.flatMap(gateway.generate(cmd), (result) => Effect.map(Clock.currentTimeMillis, (at) => ({ result, at })))
      ),
      ms
    )
  )

/** The caller's view of one call: instant, target, latency, cost, evidence without its call id. */
const callerView = (a: { readonly at: number; readonly result: ModelResult.ModelResult }) => {
  const { callId: _callId, startedAt, configVersion: _version, ...evidence } = a.result.evidence
  return { latency: a.at - startedAt, evidence, content: a.result.content }
}

describe("Shadow traffic", () => {
  it.effect("the caller's answer instant and evidence are identical with shadow on and off", () =>
    Effect.gen(function* () {
      // Each run on a fresh TestClock from 0.
      const off = yield* answers([command("ticket.classify")]).pipe(
        Effect.provide(layer(definition(undefined))),
        Effect.provide(TestContext.TestContext)
      )
      const on = yield* Effect.gen(function* () {
        const got = yield* answers([command("ticket.classify")])
        // The candidate answered 500 ms after the primary settled at 10: recorded, content-free.
        const records = yield* shadowRecords
        return { got, records }
      }).pipe(Effect.provide(layer(definition({}))), Effect.provide(TestContext.TestContext))
      assert.deepStrictEqual([off[0]!.at, on.got[0]!.at], [10, 10])
      assert.deepStrictEqual(callerView(on.got[0]!), callerView(off[0]!))
      assert.strictEqual(callerView(on.got[0]!).latency, 10)
      assert.strictEqual(on.records.length, 1)
      const r = on.records[0]!
      assert.deepStrictEqual(
        [
          r.callId,
          r.candidate,
          r.primary,
          r.outcome,
          r.schemaValid,
          r.agreement,
          r.fieldsCompared,
          r.latencyMs,
          r.startedAt
        ],
        [on.got[0]!.result.evidence.callId, candidateRef, refs.primary, "success", true, 0.5, 2, 300, 10]
      )
      assert.isTrue(r.cost > 0)
      // No content in the record.
      assert.notInclude(JSON.stringify(r), "billing")
    })
  )

  it("samples a call by a hash of its id: the same id, the same answer; about the share of ids", () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => `mg_${i}`)
    for (const share of [0.05, 0.2]) {
      const picked = ids.filter((id) => ShadowSample.sampled(id, share))
      assert.isTrue(Math.abs(picked.length / ids.length - share) <= 0.01, `${picked.length} for ${share}`)
      assert.isTrue(picked.every((id) => ShadowSample.sampled(id, share)))
      // A larger share keeps every id a smaller one sampled.
      assert.isTrue(picked.every((id) => ShadowSample.sampled(id, 0.5)))
    }
    assert.isFalse(ids.some((id) => ShadowSample.sampled(id, 0)))
    assert.isTrue(ids.every((id) => ShadowSample.sampled(id, 1)))
  })

  it.effect("a candidate's answer is judged as production judges it: truncated at the token limit is invalid", () =>
    Effect.gen(function* () {
      yield* answers([command("ticket.classify")])
      const records = yield* shadowRecords
      assert.deepStrictEqual(
        records.map((r) => [r.outcome, r.schemaValid, r.agreement]),
        [["invalid_output", false, undefined]]
      )
    }).pipe(
      Effect.provide(
        layer(definition({}), Budgets.layerOff, {
          ...scripts,
          // well-formed JSON, but cut at the output-token limit
          [candidateRef]: [
            ScriptedProvider.success({
              after: 300,
              value: { category: "billing", confidence: 0.9 },
              finishReason: "length"
            })
          ]
        })
      )
    )
  )

  it.effect("never runs for a command that offers side-effecting tools", () =>
    Effect.gen(function* () {
      const before = yield* dropped("side_effecting_tools")
      const tools = [
        { name: "refund", description: "Refunds an order", parameters: { type: "object" }, sideEffecting: true }
      ]
      yield* answers([command("ticket.classify", { tools })])
      assert.deepStrictEqual(yield* shadowRecords, [])
      assert.strictEqual((yield* dropped("side_effecting_tools")) - before, 1)
      const log = yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)
      assert.deepStrictEqual(
        log.map((a) => a.target),
        [refs.primary]
      )
    }).pipe(Effect.provide(layer(definition({}))))
  )

  it.effect("never goes to a target outside the call's regions", () =>
    Effect.gen(function* () {
      yield* answers([command("ticket.classify", { regions: ["eu"] })])
      assert.deepStrictEqual(yield* shadowRecords, [])
      // Allowed when the call allows the target's region.
      yield* answers([command("ticket.classify")])
      assert.deepStrictEqual<ReadonlyArray<string>>(
        (yield* shadowRecords).map((r) => r.candidate),
        [refs.us]
      )
    }).pipe(Effect.provide(layer(definition({ target: refs.us }))))
  )

  it.effect("at most maxConcurrent in flight: the rest are dropped under load", () =>
    Effect.gen(function* () {
      const before = yield* dropped("load")
      const got = yield* answers([command("ticket.classify"), command("ticket.classify"), command("ticket.classify")])
      assert.deepStrictEqual(
        got.map((g) => g.at),
        [10, 10, 10]
      )
      assert.strictEqual((yield* shadowRecords).length, 1)
      assert.strictEqual((yield* dropped("load")) - before, 2)
    }).pipe(Effect.provide(layer(definition({ maxConcurrent: 1 }))))
  )

  it.effect("charged to the shadow budget tenant, not the caller's", () =>
    Effect.gen(function* () {
      const budgets = yield* Budgets.Budgets
      yield* answers([command("ticket.classify")])
      const record = (yield* shadowRecords)[0]!
      assert.isTrue(record.cost > 0)
      assert.strictEqual((yield* budgets.balance(TenantId.make("shadow"))).committed, record.cost)
      // The caller's tenant paid for the primary call only.
      const primaryCost = (yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records))[0]!.evidence.cost
        .actual
      assert.strictEqual((yield* budgets.balance(TenantId.make("acme"))).committed, primaryCost)
    }).pipe(
      Effect.provide(
        layer(definition({}), Budgets.layerMemory({ tenants: { acme: { limit: 10 }, shadow: { limit: 1 } } }))
      )
    )
  )

  it.effect("a shadow call that does not fit the shadow budget is dropped; the caller is unaffected", () =>
    Effect.gen(function* () {
      const before = yield* dropped("budget")
      const [got] = yield* answers([command("ticket.classify")])
      assert.deepStrictEqual([got!.at, got!.result.evidence.target], [10, refs.primary])
      assert.deepStrictEqual(yield* shadowRecords, [])
      assert.strictEqual((yield* dropped("budget")) - before, 1)
    }).pipe(Effect.provide(layer(definition({}), Budgets.layerMemory({ tenants: { acme: { limit: 10 } } }))))
  )

  it.effect(
    "the candidate gets the workflow's sampling options and the command's overrides, as production does",
    () => {
      const accepting = (t: ModelTarget) =>
        new ModelTarget({
          ...t,
          capabilities: new Capabilities({ ...t.capabilities, options: ["temperature", "seed"] })
        })
      const seen: Array<ProviderAdapter.ProviderRequest> = []
      const candidate: ProviderAdapter.ProviderAdapter = {
        provider: "vllm",
        generate: (request) =>
          Effect.sync(() => {
            seen.push(request)
            return {
              text: JSON.stringify({ category: "billing", confidence: 0.9 }),
              toolCalls: [],
              finishReason: "stop",
              refusal: false,
              usage: new Usage({ inputTokens: 10, outputTokens: 5 }),
              modelVersion: undefined,
              requestId: undefined,
              httpStatus: 200
            }
          }),
        stream: () => Stream.empty
      }
      const def: GatewayConfig.Definition = {
        config: GatewayConfig.GatewayConfig.make({
          targets: [
            ...targets.slice(0, 2).map(accepting),
            ...targets.slice(2),
            accepting(target(candidateRef, "vllm"))
          ],
          workflows: [
            workflow({
              name: "ticket.classify",
              output: { schema: "Classification", schemaVersion: "1" },
              options: { temperature: { default: 0.3, min: 0, max: 1 }, seed: 11 },
              shadow: { target: candidateRef, share: 1, maxConcurrent: 4 }
            })
          ]
        }),
        schemas: { Classification }
      }
      return Effect.gen(function* () {
        yield* answers([command("ticket.classify")])
        yield* answers([command("ticket.classify", { options: { temperature: 0.5 } })])
        assert.deepStrictEqual(
          seen.map((r) => r.options),
          [
            { temperature: 0.3, seed: 11 },
            { temperature: 0.5, seed: 11 }
          ]
        )
        assert.strictEqual((yield* shadowRecords).length, 2)
      }).pipe(
        Effect.provide(
          ModelGateway.layer(def).pipe(
            Layer.provideMerge(
              Layer.merge(
                ScriptedProvider.layer({ providers: ["openai", "anthropic", "gemini"], scripts }),
                ProviderAdapter.layer("vllm", Effect.succeed(candidate))
              )
            ),
            Layer.provideMerge(Layer.merge(servicesOff, Shadow.layerMemory))
          )
        )
      )
    }
  )
})
