/**
 * The router against an oracle of its own over generated registries (`routingProperty.ts`): 600
 * cases here; `RoutingProperty.slow.test.ts` runs 2,000 more.
 */
import { describe, it } from "@effect/vitest"
import { checkGenerated } from "./routingProperty.js"

describe("router: generated registries against an oracle", () => {
  it("600 generated registries, requests and breaker states: hard constraints hold, nothing excluded without cause", () =>
    checkGenerated(600))
})
