/**
 * The whole gateway against an oracle of its own over generated registries, budgets, tenants and
 * provider scripts (`gatewayProperty.ts`), the heavier run: 2,000 cases.
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertCoverage, checkCases } from "./gatewayProperty.js"

describe("gateway: generated registries, budgets and scripts against an oracle (slow)", () => {
  it.effect(
    "2,000 generated cases: hard constraints hold, money is exact, everything is settled, no defect",
    () => Effect.map(checkCases(2_000), assertCoverage),
    900_000
  )
})
