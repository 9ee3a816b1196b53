/**
 * Exact money: every cost is a whole number of store units computed in integers, an amount equal
 * to a cost affords it, and spend sums to the unit.
 */
import { assert, describe, it } from "@effect/vitest"
import { ModelTarget, Pricing as Prices } from "@modelgate/core/ModelTarget"
import * as Pricing from "@modelgate/core/Pricing"
import { FastCheck as fc } from "effect"
import { target } from "./fixtures.js"
import { affordableOutput } from "../src/internal/affordable.js"

const base = target("model://openai/small@eu", "openai")
const at = (inputPerMillion: number, outputPerMillion: number) =>
  new ModelTarget({
    ...base,
    pricing: new Prices({ inputPerMillion, outputPerMillion, currency: "USD", pricingVersion: "prices-test-1" })
  })

/** Prices as list prices are written: up to 4 decimals per million tokens, $0 to $200. */
const price = fc.integer({ min: 0, max: 2_000_000 }).map((k) => k / 10_000)
const tokens = fc.integer({ min: 0, max: 20_000_000 })
const units = (x: number) => Math.round(x * 1e9)
/** The exact cost in store units, rounded up per part (BigInt: the test's reference, not the hot path). */
const exactUnits = (n: number, p: number) => {
  const perMillion = BigInt(Math.round(p * 1e9))
  const num = BigInt(n) * perMillion
  return Number((num + 999_999n) / 1_000_000n)
}

describe("Pricing: exact money", () => {
  it("a cost is a whole number of units, never below the exact cost", () =>
    fc.assert(
      fc.property(price, price, tokens, tokens, (pi, po, n, m) => {
        const cost = Pricing.costAt(at(pi, po), n, m)
        assert.strictEqual(units(cost), exactUnits(n, pi) + exactUnits(m, po))
        assert.strictEqual(units(cost) / 1e9, cost)
      })
    ))

  it("an amount equal to a call's worst case affords its output: an affordable call is never refused", () =>
    fc.assert(
      fc.property(price, price, tokens, fc.integer({ min: 0, max: 100_000 }), (pi, po, n, m) => {
        const t = at(pi, po)
        const afford = affordableOutput(Pricing.costAt(t, n, m), n, t)
        assert.isTrue(afford >= m, `affords ${afford} < ${m}`)
        if (po > 0) assert.isTrue(Pricing.costAt(t, n, afford) <= Pricing.costAt(t, n, m) + 1e-15)
        // a unit less does not afford the input plus what was asked (when the output costs anything)
        if (Pricing.costAt(t, n, m) > 0 && m > 0 && po > 0) {
          const less = (units(Pricing.costAt(t, n, m)) - 1) / 1e9
          assert.isTrue(affordableOutput(less, n, t) < m)
        }
      })
    ))

  it("committed spend is the sum of the costs to the unit", () =>
    fc.assert(
      fc.property(price, price, fc.array(fc.tuple(tokens, tokens), { maxLength: 50 }), (pi, po, usages) => {
        const t = at(pi, po)
        let spent = 0
        let expected = 0
        for (const [n, m] of usages) {
          spent += Pricing.costOf(t, { inputTokens: n, cachedInputTokens: 0, outputTokens: m, reasoningTokens: 0 })
          expected += exactUnits(n, pi) + exactUnits(m, po)
        }
        assert.strictEqual(units(spent), expected)
      })
    ))
})
