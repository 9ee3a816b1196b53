/**
 * The router's per-workflow table (`classTermsOf`: class terms, flags and shared price sheets)
 * against the targets themselves: over generated routes, inputs counted or not, output caps and
 * subsets of the route (route positions given, found, or not route targets at all), `rank` with
 * the table orders and scores exactly as `rank` reading every target.
 */
import { assert, describe, it } from "@effect/vitest"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { FastCheck as fc, Schema } from "effect"
import { classTermsOf, rank } from "../src/internal/router/scoring.js"
import { command } from "./fixtures.js"
import { compiledScored } from "./routingFixtures.js"

const decodeTarget = Schema.decodeSync(ModelTarget)

const tiers = [undefined, "low", "standard", "high"] as const
const latencies = [undefined, "fast", "medium", "slow"] as const

const spec = fc.record({
  input: fc.integer({ min: 0, max: 40 }),
  output: fc.integer({ min: 0, max: 80 }),
  factor: fc.constantFrom(1, 1.1, 1.25, 2),
  window: fc.constantFrom(300, 4_000, 128_000),
  maxOutput: fc.constantFrom(16, 1_000, 8_000),
  tier: fc.nat(3),
  latency: fc.nat(3),
  deprecated: fc.boolean(),
  verified: fc.option(fc.integer({ min: 40, max: 100 }), { nil: undefined })
})

const targetOf = (s: typeof spec extends fc.Arbitrary<infer A> ? A : never, i: number): ModelTarget =>
  decodeTarget({
    ref: `model://p${i}/m@eu`,
    provider: `p${i}`,
    model: "m",
    capabilities: { contextWindow: s.window, maxOutputTokens: s.maxOutput },
    regions: ["eu"],
    dataClasses: ["internal"],
    tokenizerSafetyFactor: s.factor,
    // a few distinct prices, so that targets share price sheets
    pricing: { inputPerMillion: s.input * 0.075, outputPerMillion: s.output * 0.3, pricingVersion: "p-1" },
    classes: {
      ...(tiers[s.tier] === undefined ? {} : { quality: tiers[s.tier] }),
      ...(latencies[s.latency] === undefined ? {} : { latency: latencies[s.latency] })
    },
    ...(s.deprecated ? { status: "deprecated" as const } : {}),
    ...(s.verified === undefined
      ? {}
      : { quality: { seg: { score: s.verified / 100, evalVersion: "e1", evaluatedAt: "2026-11-01" } } })
  })

describe("scored selection's per-workflow table", () => {
  it("ranks and scores as the targets themselves do: counted or not, any output cap, any subset of the route", () => {
    fc.assert(
      fc.property(
        fc.array(spec, { minLength: 1, maxLength: 60 }),
        fc.option(fc.integer({ min: 1, max: 3_000 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: undefined }),
        fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }),
        fc.constantFrom("given", "found", "foreign"),
        fc.constantFrom(1_000, 10_000),
        (specs, inputTokens, maxOutputTokens, keep, positions, timeLeftMs) => {
          const route = specs.map(targetOf)
          const compiled = compiledScored("t", route, { segment: "seg" })
          const cmd = command("t", maxOutputTokens === undefined ? {} : { maxOutputTokens })
          const table = classTermsOf(compiled)
          const at = route.map((_, i) => i).filter((i) => keep[i] === true || i === 0)
          // "foreign": equal targets that are not the route's values (nothing read from the table)
          const targets = at.map((i) => (positions === "foreign" ? targetOf(specs[i]!, i) : route[i]!))
          const context = { timeLeftMs }
          const plain = rank(compiled, cmd, targets, inputTokens, context)
          const withTable = rank(
            compiled,
            cmd,
            targets,
            inputTokens,
            context,
            table,
            positions === "given" ? at : undefined
          )
          assert.deepStrictEqual(
            withTable.targets.map((t) => t.ref),
            plain.targets.map((t) => t.ref)
          )
          assert.deepStrictEqual(withTable.scores.value, plain.scores.value)
          assert.strictEqual(withTable.reason, plain.reason)
          assert.strictEqual(withTable.fastTier, plain.fastTier)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("shares one price sheet between targets of the same prices and limits", () => {
    const same = { input: 4, output: 5, factor: 1, window: 128_000, maxOutput: 1_000, tier: 1, latency: 1 }
    const route = [
      targetOf({ ...same, deprecated: false, verified: undefined }, 0),
      targetOf({ ...same, tier: 3, deprecated: true, verified: 90 }, 1),
      targetOf({ ...same, factor: 1.25, deprecated: false, verified: undefined }, 2)
    ]
    const table = classTermsOf(compiledScored("t", route))
    assert.deepStrictEqual(Array.from(table.sheet), [0, 0, 1])
    assert.strictEqual(table.sheets.count, 2)
    assert.deepStrictEqual(Array.from(table.deprecated), [0, 1, 0])
  })
})
