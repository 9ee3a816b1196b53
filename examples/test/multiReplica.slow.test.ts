/**
 * The multi-replica proof (`pnpm --filter @modelgate/examples multi-replica`) as a test: four
 * gateway processes over one redis-server of the test's own (needs `redis-server` on the PATH).
 * Every check of the proof holds, and the summary ends with the line of measured figures.
 */
import { describe, expect, it } from "vitest"
import { render, run } from "../multi-replica/main.js"

describe("multi-replica proof", () => {
  it("4 processes × 500 calls on one budget: no overspend, no permit violation, one tool run, Redis killed and back", {
    timeout: 120_000
  }, async () => {
    const summary = await run()
    const failed = Object.entries(summary.checks)
      .filter(([, held]) => !held)
      .map(([name]) => name)
    expect(failed, render(summary)).toEqual([])
    expect(Object.keys(summary.checks)).toHaveLength(8)
    expect([summary.processes, summary.overspend, summary.permitViolations, summary.duplicateToolRuns]).toEqual([
      4, 0, 0, 0
    ])
    // 4 × 500 load calls, plus the chaos phase's calls
    expect(summary.calls).toBeGreaterThan(2_000)
    // Redis really was down during the chaos phase: some calls failed closed with StoreError
    const chaos = summary.rows.find((r) => r[0] === "chaos" && r[1] === "calls / outcomes")?.[2] ?? ""
    expect(chaos).toMatch(/StoreError \d+/)
    const lines = render(summary).split("\n")
    expect(lines[lines.length - 1]).toMatch(
      /^multi-replica: processes=4 calls=\d+ overspend=0 permitViolations=0 duplicateToolRuns=0$/
    )
  })
})
