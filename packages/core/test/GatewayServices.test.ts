/**
 * Issue 13 item 1: layer order never switches a safety control off. A budget provided to the gateway
 * in any composition is the budget enforced; compositions that could let a bundle of defaults shadow
 * it do not type-check (checked by `tsc -b`, see `typeLevel` at the end).
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway } from "@modelgate/core"
import type { GatewayConfigError, GatewayError } from "@modelgate/core/Errors"
import type { ModelResult } from "@modelgate/core/ModelResult"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Exit, Fiber, Layer, Logger, TestClock } from "effect"
import { command, definition, providers, refs } from "./fixtures.js"

/**
 * $0.001 a day for acme: the worst case of one call (4096 output tokens at $1.6 per million) does
 * not fit, so an enforced budget refuses the call before any attempt.
 */
const budget = Budgets.layerMemory({ tenants: { acme: { limit: 0.001 } } })

/** A provider that would answer, so an unenforced budget shows as a success. */
const adapters = ScriptedProvider.layer({
  providers,
  scripts: { [refs.primary]: [ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 1 } })] }
})

/** The gateway with its adapters; the four services still to be provided. */
const gateway = ModelGateway.layer(definition).pipe(Layer.provide(adapters))

const others = Layer.mergeAll(Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)

/** Runs one classify call for acme through `layer`; the exit after 1 s of virtual time. */
const callThrough = (layer: Layer.Layer<ModelGateway.ModelGateway, GatewayConfigError>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(ModelGateway.generate(command("ticket.classify")))
    yield* TestClock.adjust(1000)
    return yield* Fiber.await(fiber)
  }).pipe(Effect.provide(layer), Effect.provide(Logger.remove(Logger.defaultLogger)))

const errorTag = (exit: Exit.Exit<ModelResult, GatewayError>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : "no typed failure"

const compositions: ReadonlyArray<readonly [string, Layer.Layer<ModelGateway.ModelGateway, GatewayConfigError>]> = [
  ["provide(mergeAll(budget, others))", gateway.pipe(Layer.provide(Layer.mergeAll(budget, others)))],
  ["provide(mergeAll(others, budget))", gateway.pipe(Layer.provide(Layer.mergeAll(others, budget)))],
  ["provideMerge(budget), then provide(others)", gateway.pipe(Layer.provideMerge(budget), Layer.provide(others))],
  [
    "provideMerge(others), then provideMerge(budget)",
    gateway.pipe(Layer.provideMerge(others), Layer.provideMerge(budget))
  ],
  ["withDefaults({ budgets })", gateway.pipe(ModelGateway.withDefaults({ budgets: budget }))],
  [
    "withDefaults({ budgets, concurrency, health, recorder })",
    gateway.pipe(
      ModelGateway.withDefaults({
        budgets: budget,
        concurrency: Concurrency.layerOff,
        health: Health.layerOff,
        recorder: CallRecorder.layerMemory
      })
    )
  ],
  ["provide(budget), then withDefaults()", gateway.pipe(Layer.provide(budget), ModelGateway.withDefaults())],
  ["provideMerge(budget), then withDefaults()", gateway.pipe(Layer.provideMerge(budget), ModelGateway.withDefaults())],
  ["withDefaults(), then provide(budget)", gateway.pipe(ModelGateway.withDefaults(), Layer.provide(budget))],
  ["withDefaults(), then provideMerge(budget)", gateway.pipe(ModelGateway.withDefaults(), Layer.provideMerge(budget))],
  [
    "withDefaults(), then provide(mergeAll(budget, recorder))",
    gateway.pipe(ModelGateway.withDefaults(), Layer.provide(Layer.mergeAll(budget, CallRecorder.layerMemory)))
  ],
  [
    "withDefaults(), then provide(mergeAll(recorder, budget))",
    gateway.pipe(ModelGateway.withDefaults(), Layer.provide(Layer.mergeAll(CallRecorder.layerMemory, budget)))
  ],
  [
    "withDefaults({ recorder }), then provide(budget)",
    gateway.pipe(ModelGateway.withDefaults({ recorder: CallRecorder.layerMemory }), Layer.provide(budget))
  ],
  [
    "withDefaults(), then the adapters and the budget in one mergeAll",
    ModelGateway.layer(definition).pipe(ModelGateway.withDefaults(), Layer.provide(Layer.mergeAll(adapters, budget)))
  ],
  [
    "withDefaults(), then the budget and the adapters in one mergeAll",
    ModelGateway.layer(definition).pipe(ModelGateway.withDefaults(), Layer.provide(Layer.mergeAll(budget, adapters)))
  ]
]

describe("ModelGateway services: a budget provided in any composition is enforced", () => {
  it.effect("control: without the budget the same call succeeds (the provider answers)", () =>
    Effect.gen(function* () {
      const exit = yield* callThrough(gateway.pipe(ModelGateway.withDefaults()))
      assert.isTrue(Exit.isSuccess(exit))
      const explicit = yield* callThrough(gateway.pipe(Layer.provide(Layer.mergeAll(Budgets.layerOff, others))))
      assert.isTrue(Exit.isSuccess(explicit))
    })
  )

  for (const [name, layer] of compositions) {
    it.effect(`${name}: BudgetExceeded, no attempt`, () =>
      Effect.gen(function* () {
        const exit = yield* callThrough(layer)
        assert.strictEqual(errorTag(exit), "BudgetExceeded")
        const attempts = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.attempts : undefined
        assert.deepStrictEqual(attempts, [])
      })
    )
  }

  it.effect("withDefaults: a service left out is taken from the context when there, else the default", () =>
    Effect.gen(function* () {
      // A recorder provided after withDefaults receives the record...
      const memory = yield* CallRecorder.makeMemory
      const layer = gateway.pipe(
        ModelGateway.withDefaults(),
        Layer.provide(Layer.succeed(CallRecorder.CallRecorder, memory))
      )
      assert.isTrue(Exit.isSuccess(yield* callThrough(layer)))
      assert.deepStrictEqual(
        (yield* memory.records).map((r) => r.outcome),
        ["success"]
      )
      // ...and without one, the default recorder logs the call (one Info line).
      const lines: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        lines.push(`${logLevel.label} ${String(message)}`)
      })
      const fiber = yield* Effect.fork(
        ModelGateway.generate(command("ticket.classify")).pipe(
          Effect.provide(gateway.pipe(ModelGateway.withDefaults())),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )
      )
      yield* TestClock.adjust(1000)
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(fiber)))
      assert.strictEqual(lines.filter((l) => l.startsWith("INFO modelgate call ")).length, 1)
    })
  )

  it("there is no bundle of defaults to merge: layerDefaults is gone", () => {
    assert.isFalse("layerDefaults" in ModelGateway)
  })
})

/**
 * Compositions that must not compile. Never called: `tsc -b` checks each `@ts-expect-error` (an
 * unused one is an error), so these fail the typecheck if they ever start to compile.
 */
export const typeLevel = () => {
  // withDefaults is a function over the gateway's layer, not a layer: it cannot be merged next to a
  // budget (and so cannot shadow it), in either order.
  // @ts-expect-error not a Layer
  Layer.mergeAll(budget, ModelGateway.withDefaults())
  // @ts-expect-error not a Layer
  Layer.mergeAll(ModelGateway.withDefaults(), budget)
  gateway.pipe(
    Layer.provide(
      Layer.mergeAll(
        budget,
        // @ts-expect-error not a Layer
        ModelGateway.withDefaults()
      )
    )
  )
  // The old bundle is gone.
  // @ts-expect-error removed: it shadowed a Budgets layer merged before it
  ModelGateway.layerDefaults
  // A gateway without all four services is not a complete layer: nothing is implicit.
  // @ts-expect-error Concurrency, Health and CallRecorder are missing
  const onlyBudget: Layer.Layer<ModelGateway.ModelGateway, GatewayConfigError> = gateway.pipe(Layer.provide(budget))
  // @ts-expect-error all four services are missing
  const bare: Layer.Layer<ModelGateway.ModelGateway, GatewayConfigError> = gateway
  return [onlyBudget, bare]
}
