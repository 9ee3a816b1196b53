/**
 * `ModelGateway.layerCatalogue`: catalogue ids in, a working gateway out, with defaults that never
 * widen policy (no region claimed, public data only, a bounded output cap and deadline).
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Catalogue, ModelCommand, ModelGateway } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Exit, Fiber, Layer, TestClock } from "effect"

const mini = "model://openai/gpt-4.1-mini"
const haiku = "model://anthropic/claude-haiku-4-5"

const gateway = (scripts: ScriptedProvider.Scripts, options?: ModelGateway.CatalogueOptions) =>
  ModelGateway.layerCatalogue(["openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5"], options).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts })),
    Layer.provideMerge(CallRecorder.layerMemory)
  )

const ask = (fields: Record<string, unknown> = {}) =>
  Effect.flatMap(
    ModelCommand.decodeUnknown({
      workflow: "chat",
      tenant: "me",
      messages: [{ _tag: "user", content: "Say hello" }],
      ...fields
    }),
    (command) => Effect.exit(ModelGateway.generate(command))
  )

const run = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust("1 second")
    return yield* Fiber.join(fiber)
  })

describe("ModelGateway.layerCatalogue", () => {
  it.effect("answers on the first id, priced by the catalogue, versioned, falls back along the ids", () =>
    Effect.gen(function* () {
      const exit = yield* run(ask())
      assert.isTrue(Exit.isSuccess(exit))
      const [record] = yield* (yield* CallRecorder.MemoryRecorder).records
      assert.strictEqual(record!.outcome, "success")
      assert.strictEqual(record!.evidence.target, haiku)
      assert.isTrue(record!.evidence.fallbackUsed)
      assert.strictEqual(record!.evidence.catalogueVersion, Catalogue.version)
      assert.strictEqual(record!.evidence.policyVersion, `catalogue-defaults-${Catalogue.version}`)
      const attempts = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      // The primary (retried once, the default retry policy), then the fallback.
      assert.deepStrictEqual([...new Set(attempts.map((a) => a.target))], [mini, haiku])
    }).pipe(
      Effect.provide(
        gateway({
          [mini]: [ScriptedProvider.unavailable({ after: 10 })],
          [haiku]: [ScriptedProvider.success({ after: 20, text: "Hello" })]
        })
      )
    )
  )

  it.effect("claims no region and takes public data only: other requests are refused, no provider called", () =>
    Effect.gen(function* () {
      const region = yield* run(ask({ regions: ["eu"] }))
      const data = yield* run(ask({ dataClass: "internal" }))
      for (const exit of [region, data]) {
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
          assert.include(["InvalidRequest", "PolicyViolation", "NoEligibleRoute"], failure?._tag)
        }
      }
      assert.deepStrictEqual(yield* (yield* ScriptedProvider.ScriptedProvider).attempts, [])
    }).pipe(Effect.provide(gateway({})))
  )

  it.effect("a budget reserves for the 1 024-token default cap, not the model's maximum", () =>
    Effect.gen(function* () {
      // Output at most $5 per million tokens on this route (claude-haiku-4-5): 1 024 tokens ≈
      // $0.005; gpt-4.1-mini's 32 768-token maximum alone ≈ $0.052. A $0.02 budget fits the first only.
      const exit = yield* run(ask())
      assert.isTrue(Exit.isSuccess(exit))
    }).pipe(
      Effect.provide(
        gateway({}, { workflow: "chat" }).pipe(Layer.provide(Budgets.layerMemory({ tenants: { me: { limit: 0.02 } } })))
      )
    )
  )

  it.effect("the same budget refuses a call that may use the model's maximum output", () =>
    Effect.gen(function* () {
      const exit = yield* run(ask())
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "BudgetExceeded")
    }).pipe(
      Effect.provide(
        gateway({}, { maxOutputTokens: 32_768 }).pipe(
          Layer.provide(Budgets.layerMemory({ tenants: { me: { limit: 0.02 } } }))
        )
      )
    )
  )

  it.effect("options name the workflow, regions and data class of every target and the workflow", () =>
    Effect.gen(function* () {
      const exit = yield* run(ask({ workflow: "support", regions: ["eu"], dataClass: "internal" }))
      assert.isTrue(Exit.isSuccess(exit))
    }).pipe(Effect.provide(gateway({}, { workflow: "support", regions: ["eu"], dataClass: "internal" })))
  )
})
