/**
 * The router against an oracle of its own over generated registries (`routingProperty.ts`), the
 * heavier run: 2,000 cases.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { caseArb, check } from "./routingProperty.js"

describe("router: generated registries against an oracle (slow)", async () => {
  it("2,000 generated registries, requests and breaker states: hard constraints hold, nothing excluded without cause", async () => {
    const tally = { cases: 0, routed: 0 }
    await fc.assert(
      fc.asyncProperty(caseArb, ({ request, targets }) => check(targets, request, tally)),
      { numRuns: 2_000 }
    )
    // the generator reaches both sides: routed decisions and refusals
    assert.isAbove(tally.routed, tally.cases / 10)
    assert.isBelow(tally.routed, tally.cases)
  })
})
