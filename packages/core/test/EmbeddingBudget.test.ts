/**
 * Embedding calls under a limited budget (issue 26, finding 2): the reservation of an embedding
 * call is exactly its input cost, so any rounding between the reservation and the affordability
 * check refused valid calls. Properties over random prices, safety factors and inputs: a budget
 * whose limit is exactly the call's worst case admits it (one input, and a 2,048-input batch); a
 * unit less refuses it before any attempt, naming the tenant's limit and the call's worst case.
 * Virtual time only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, Embeddings, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { TokenEstimator } from "@modelgate/core"
import { TenantId } from "@modelgate/core/ModelCommand"
import { ModelTarget, TargetRef } from "@modelgate/core/ModelTarget"
import * as Pricing from "@modelgate/core/Pricing"
import { Effect, Exit, FastCheck as fc, Layer, Schema } from "effect"
import { workflow } from "./fixtures.js"
import { instantEmbedder } from "./support/embedder.js"
import { driven, failureOf } from "./virtualTime.js"
import { inputTokensAt } from "../src/internal/affordable.js"

const ref = TargetRef.make("model://oa/te3s@eu")

const embeddingTarget = (inputPerMillion: number, tokenizerSafetyFactor: number) =>
  Schema.decodeSync(ModelTarget)({
    ref,
    provider: "oa",
    model: "text-embedding-3-small",
    capabilities: {
      streaming: false,
      contextWindow: 100_000_000,
      maxOutputTokens: 1,
      embeddings: { dimensions: 2 }
    },
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { inputPerMillion, outputPerMillion: 0, pricingVersion: "emb-prop" },
    tokenizerSafetyFactor,
    limits: { maxAttempts: 1, perAttemptTimeout: 400, minimumAttemptTime: 50 }
  })

const definitionAt = (target: ModelTarget): GatewayConfig.Definition => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: [target],
    workflows: [
      workflow({
        name: "docs.embed",
        policyVersion: "policy-1",
        prompt: { id: "docs.embed", version: "1" },
        route: [ref],
        embedding: { family: "text-embedding-3-small", dimensions: 2 },
        maxInputCharacters: 50_000_000
      })
    ]
  })
})

const layerFor = (target: ModelTarget, limit: number, usage: number | undefined) =>
  ModelGateway.layer(definitionAt(target)).pipe(
    Layer.provideMerge(instantEmbedder("oa", usage)),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layerMemory({ tenants: { acme: { limit } } }),
        Concurrency.layerOff,
        Health.layerOff,
        CallRecorder.layerMemory
      )
    )
  )

/**
 * The call's worst case as the gateway reserves it: its input as the gateway counts it (at once up to
 * a slice, in slices beyond), at the target's safety factor; output is free.
 */
const worstCaseOf = (target: ModelTarget, inputs: ReadonlyArray<string>) =>
  Effect.map(
    TokenEstimator.estimateInputYielding({ messages: inputs.map((content) => ({ _tag: "user", content })) }),
    (counted) => {
      const tokens = inputTokensAt(counted, target)
      return { tokens, cost: Pricing.costAt(target, tokens, 0) }
    }
  )

const embed = (inputs: ReadonlyArray<string>) =>
  ModelGateway.embed(
    Schema.decodeUnknownSync(Embeddings.EmbedCommand)({ workflow: "docs.embed", tenant: "acme", inputs: [...inputs] })
  )

/** Prices as list prices are written: up to 4 decimals per million tokens (embeddings: up to $2). */
const price = fc.integer({ min: 1, max: 20_000 }).map((k) => k / 10_000)
const safety = fc.constantFrom(1, 1.1, 1.15, 1.2, 1.25, 1.3)
const text = fc.string({ minLength: 1, maxLength: 300, unit: "grapheme" })
const runs = { fastCheck: { numRuns: 80, endOnFailure: true } }

describe("embedding calls under a limited budget (exact money)", () => {
  it.effect.prop(
    "one input: a limit equal to the worst case admits the call, billed what the provider reports",
    [price, safety, text, fc.boolean()],
    ([pi, factor, input, reported]) => {
      const target = embeddingTarget(pi, factor)
      return Effect.flatMap(worstCaseOf(target, [input]), (worst) =>
        Effect.gen(function* () {
          const exit = yield* driven(Effect.exit(embed([input])))
          assert.isTrue(Exit.isSuccess(exit), `refused: ${JSON.stringify(failureOf(exit))}`)
          if (Exit.isFailure(exit)) return
          assert.strictEqual(exit.value.evidence.cost.reserved, worst.cost)
          assert.strictEqual(exit.value.evidence.cost.actual, worst.cost)
          const balance = yield* Effect.flatMap(Budgets.Budgets, (b) => b.balance(TenantId.make("acme")))
          assert.strictEqual(balance.reserved, 0)
          assert.strictEqual(balance.committed, worst.cost)
        }).pipe(Effect.provide(layerFor(target, worst.cost, reported ? worst.tokens : undefined)))
      )
    },
    runs
  )

  it.effect.prop(
    "one input: a limit one store unit below the worst case refuses it, naming the tenant's limit",
    [fc.integer({ min: 100, max: 20_000 }).map((k) => k / 10_000), safety, text],
    ([pi, factor, input]) => {
      const target = embeddingTarget(pi, factor)
      return Effect.flatMap(worstCaseOf(target, [input]), (worst) => {
        const limit = (Math.round(worst.cost * 1e9) - 1) / 1e9
        return Effect.gen(function* () {
          const exit = yield* driven(Effect.exit(embed([input])))
          const error = failureOf(exit)
          assert.strictEqual(error?._tag, "BudgetExceeded")
          if (error?._tag !== "BudgetExceeded") return
          assert.strictEqual(error.limit, limit)
          assert.strictEqual(error.requested, worst.cost)
          assert.strictEqual(error.reserved, 0)
          assert.strictEqual(error.committed, 0)
        }).pipe(Effect.provide(layerFor(target, limit, undefined)))
      })
    },
    runs
  )

  it.effect.prop(
    "a 2,048-input batch: a limit equal to the worst case admits it",
    [price, safety, fc.array(text, { minLength: 2_048, maxLength: 2_048 })],
    ([pi, factor, inputs]) => {
      const target = embeddingTarget(pi, factor)
      return Effect.flatMap(worstCaseOf(target, inputs), (worst) =>
        Effect.gen(function* () {
          const exit = yield* driven(Effect.exit(embed(inputs)))
          assert.isTrue(Exit.isSuccess(exit), `refused: ${JSON.stringify(failureOf(exit))}`)
          if (Exit.isFailure(exit)) return
          assert.strictEqual(exit.value.vectors.length, 2_048)
          assert.strictEqual(exit.value.evidence.cost.actual, worst.cost)
        }).pipe(Effect.provide(layerFor(target, worst.cost, undefined)))
      )
    },
    { fastCheck: { numRuns: 12, endOnFailure: true } }
  )
})

describe("store units at any size", () => {
  // Amounts up to 10^14 units ($100,000): past ~10^10 units a float amount times 10^9 is off the
  // whole unit by more than a fixed tolerance, which rounded a reservation up (or a limit down) a unit.
  const units = fc.array(fc.integer({ min: 1, max: 100_000_000_000_000 }), { minLength: 200, maxLength: 200 })

  it.effect.prop(
    "a reservation of exactly the limit is granted, and a unit more is refused",
    [units],
    ([all]) => {
      const limits = all.map((u) => u / 1e9)
      const tenants = Object.fromEntries(limits.map((limit, i) => [`t${i}`, { limit }]))
      return Effect.gen(function* () {
        const budgets = yield* Budgets.Budgets
        for (const [i, limit] of limits.entries()) {
          const tenant = TenantId.make(`t${i}`)
          const held = yield* budgets.reserve(tenant, limit)
          assert.strictEqual(held.amount, limit)
          const balance = yield* budgets.balance(tenant)
          assert.strictEqual(balance.limit, limit)
          assert.strictEqual(balance.reserved, limit)
          const more = yield* Effect.exit(budgets.reserve(tenant, 1e-9))
          assert.strictEqual(failureOf(more)?._tag, "BudgetExceeded")
          yield* held.settle(limit)
          assert.strictEqual((yield* budgets.balance(tenant)).committed, limit)
        }
      }).pipe(Effect.provide(Budgets.layerMemory({ tenants })))
    },
    { fastCheck: { numRuns: 8, endOnFailure: true } }
  )
})
