/**
 * The router against an oracle of its own over generated registries (`routingProperty.ts`), the
 * heavier run: 2,000 cases.
 */
import { describe, it } from "@effect/vitest"
import { checkGenerated } from "./routingProperty.js"

describe("router: generated registries against an oracle (slow)", () => {
  it("2,000 generated registries, requests and breaker states: hard constraints hold, nothing excluded without cause", () =>
    checkGenerated(2_000))
})
