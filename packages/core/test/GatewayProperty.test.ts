/**
 * The whole gateway against an oracle of its own over generated registries, budgets, tenants and
 * provider scripts (`gatewayProperty.ts`): 300 cases here; `GatewayProperty.slow.test.ts` runs 2,000
 * more.
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertCoverage, checkCases } from "./gatewayProperty.js"

describe("gateway: generated registries, budgets and scripts against an oracle", () => {
  it.effect(
    "300 generated cases: hard constraints hold, money is exact, everything is settled, no defect",
    () => Effect.map(checkCases(300), assertCoverage),
    120_000
  )
})
