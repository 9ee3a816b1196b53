/**
 * The engine when a store cannot answer (virtual time): budgets and permits fail closed — the call
 * is refused with a `StoreError` naming the store and no provider is called; a commit the budget
 * store did not answer after the provider answered leaves the call's answer alone, shows
 * `settlement: "pending"` in its CallRecord and is retried until it lands.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Budgets from "@modelgate/core/Budgets"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import { type GatewayError, StoreError } from "@modelgate/core/Errors"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import * as Health from "@modelgate/core/Health"
import { TenantId } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import type { ModelResult } from "@modelgate/core/ModelResult"
import { ModelTarget, Pricing } from "@modelgate/core/ModelTarget"
import * as PermitStore from "@modelgate/core/PermitStore"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import { Effect, Exit, Fiber, Layer, TestClock } from "effect"
import { command, target, workflow } from "./fixtures.js"
import * as FastPath from "../src/internal/fastPath.js"
import { makeMemory as makeMemoryBudgetStore } from "../src/internal/budgetMemoryStore.js"
import type { MemoryStore } from "../src/internal/budgetMemoryStore.js"

const P = "model://openai/small@eu"
const acme = TenantId.make("acme")
const limits = { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }
const targetP = new ModelTarget({
  ...target(P, "openai", { limits }),
  pricing: new Pricing({ inputPerMillion: 1_000, outputPerMillion: 2_000, currency: "USD", pricingVersion: "p-1" })
})
const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [targetP],
    workflows: [workflow({ name: "w.reply", route: [P], timeout: 10_000, maxOutputTokens: 100 })]
  }),
  schemas: {}
}

const storeError = (store: "budget" | "permit", operation: string) =>
  new StoreError({ store, operation, detail: "unavailable" })

const layer = (options: {
  readonly store: (inner: MemoryStore) => BudgetStore.Service
  readonly permits?: PermitStore.Service
}) =>
  ModelGateway.layer(definition).pipe(
    Layer.provideMerge(
      ScriptedProvider.layer({
        providers: ["openai"],
        scripts: {
          [P]: [ScriptedProvider.success({ after: 50, text: "ok", usage: { inputTokens: 10, outputTokens: 5 } })]
        }
      })
    ),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layer({ tenants: { acme: { limit: 100, period: "total" } }, reservationTtl: "1 minute" }).pipe(
          Layer.provideMerge(
            Layer.effect(
              BudgetStore.BudgetStore,
              Effect.map(makeMemoryBudgetStore, (inner) => options.store(inner))
            )
          )
        ),
        Concurrency.layer({ permits: 4 }).pipe(
          Layer.provide(Layer.succeed(PermitStore.PermitStore, options.permits ?? PermitStore.memory))
        ),
        Health.layerOff,
        CallRecorder.layerMemory
      )
    )
  )

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const attempts = Effect.flatMap(ScriptedProvider.ScriptedProvider, (s) => s.attempts)
const errorOf = (exit: Exit.Exit<ModelResult, GatewayError>): GatewayError | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
const units = (x: number) => Math.round(x * Budgets.unitsPerCurrency)
const balance = Effect.flatMap(BudgetStore.BudgetStore, (s) => s.balance("acme/total", 0))

/** Runs one call to its end in virtual time. */
const call = Effect.gen(function* () {
  const g = yield* ModelGateway.ModelGateway
  const fiber = yield* Effect.fork(Effect.exit(g.generate(command("w.reply", { tenant: acme }))))
  yield* TestClock.adjust(1_000)
  return yield* Fiber.join(fiber)
})

describe("stores that cannot answer", () => {
  it.effect("a budget store that cannot reserve: StoreError naming the budget store; no provider call", () =>
    Effect.gen(function* () {
      const exit = yield* call
      const error = errorOf(exit)
      assert.strictEqual(error?._tag, "StoreError")
      if (error?._tag === "StoreError") assert.deepStrictEqual([error.store, error.operation], ["budget", "reserve"])
      assert.strictEqual((yield* attempts).length, 0)
      const [record] = yield* records
      assert.deepStrictEqual(
        [record?.outcome, record?.errorTag, record?.errorReason],
        ["failed", "StoreError", "budget"]
      )
    }).pipe(
      Effect.provide(
        layer({ store: (inner) => ({ ...inner, reserve: () => Effect.fail(storeError("budget", "reserve")) }) })
      )
    )
  )

  it.effect(
    "a permit store that cannot answer: StoreError naming the permit store; no provider call; nothing held",
    () =>
      Effect.gen(function* () {
        const exit = yield* call
        const error = errorOf(exit)
        assert.strictEqual(error?._tag, "StoreError")
        if (error?._tag === "StoreError") assert.strictEqual(error.store, "permit")
        assert.strictEqual((yield* attempts).length, 0)
        assert.deepStrictEqual(yield* balance, { committed: 0, reserved: 0, overspent: 0 })
      }).pipe(
        Effect.provide(
          layer({
            store: (inner) => inner,
            permits: {
              pool: () => ({
                acquire: () => Effect.fail(storeError("permit", "acquire")),
                snapshot: Effect.succeed({ inUse: 0, sharedInUse: 0, waiting: 0, keys: 0, byKey: new Map() })
              })
            }
          })
        )
      )
  )

  it.effect("a commit the store did not answer: the answer stands, the record says pending, the retry commits it", () =>
    Effect.gen(function* () {
      const exit = yield* call
      assert.isTrue(Exit.isSuccess(exit))
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "success")
      assert.strictEqual(record?.settlement, "pending")
      const actual = record?.evidence.cost.actual ?? 0
      assert.isAbove(actual, 0)
      // the first retry (100 ms after the failed commit) lands
      const b = yield* balance
      assert.deepStrictEqual([b.committed, b.reserved], [units(actual), 0])
    }).pipe(
      Effect.provide(
        layer({
          store: (inner) => {
            let down = 1
            return {
              ...inner,
              commit: (r) => (down-- > 0 ? Effect.fail(storeError("budget", "commit")) : inner.commit(r))
            }
          }
        })
      )
    )
  )

  it.effect("a healthy store: no settlement field; the memory stores keep the synchronous fast path", () =>
    Effect.gen(function* () {
      const c = yield* Concurrency.Concurrency
      assert.isDefined(FastPath.concurrency(c))
      assert.isTrue(Exit.isSuccess(yield* call))
      const [record] = yield* records
      assert.isUndefined(record?.settlement)
    }).pipe(Effect.provide(layer({ store: (inner) => inner })))
  )
})
