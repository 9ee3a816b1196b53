/**
 * The router against an oracle of its own over generated registries (`routingProperty.ts`): 600
 * cases here; `RoutingProperty.slow.test.ts` runs 2,000 more.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { caseArb, check } from "./routingProperty.js"

describe("router: generated registries against an oracle", () => {
  it("600 generated registries, requests and breaker states: hard constraints hold, nothing excluded without cause", async () => {
    const tally = { cases: 0, routed: 0 }
    await fc.assert(
      fc.asyncProperty(caseArb, ({ request, targets }) => check(targets, request, tally)),
      { numRuns: 600 }
    )
    // the generator reaches both sides: routed decisions and refusals
    assert.isAbove(tally.routed, tally.cases / 10)
    assert.isBelow(tally.routed, tally.cases)
  })
})
