/**
 * The router against an oracle of its own over generated registries (`routingProperty.ts`), the
 * heavier run: 2,000 cases.
 */
import { describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { caseArb, check } from "./routingProperty.js"

describe("router: generated registries against an oracle (slow)", () => {
  it("2,000 generated registries, requests and breaker states: hard constraints hold, nothing excluded without cause", () => {
    fc.assert(
      fc.property(caseArb, ({ request, targets }) => check(targets, request)),
      { numRuns: 2_000 }
    )
  })
})
