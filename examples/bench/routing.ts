/**
 * §3 Routing scale: `gateway.router.resolve` with 10, 100 and 1,000 targets in one workflow's
 * route (all eligible, so every target is checked and listed), against an empty `runSync`; both
 * sides build their Effect per decision.
 */
import { Effect } from "effect"
import { buildGateway, command, instantAdapter, target, workflow } from "./fixtures.js"
import { type PairedResult, paired, type Profile } from "./harness.js"

export interface RoutingPoint {
  readonly targets: number
  /** Per-decision time minus an empty `Effect.runSync`, µs (median over rounds). */
  readonly decisionUs: number
  readonly p99Us: number
  readonly raw: PairedResult
}

export interface RoutingResults {
  readonly points: ReadonlyArray<RoutingPoint>
  /** decision(10n) / decision(n) for each 10× step. */
  readonly growth: ReadonlyArray<{ readonly from: number; readonly to: number; readonly ratio: number }>
}

export const run = async (profile: Profile): Promise<RoutingResults> => {
  const points: Array<RoutingPoint> = []
  for (const n of [10, 100, 1_000]) {
    const targets = Array.from({ length: n }, (_, i) => target(`model://bench/m${i}@eu`, "bench"))
    const stack = await buildGateway({
      targets,
      workflows: [
        workflow(
          "bench.route",
          targets.map((t) => t.ref)
        )
      ],
      adapters: { bench: instantAdapter }
    })
    try {
      const cmd = command("bench.route")
      const decision = Effect.runSync(stack.gateway.router.resolve(cmd))
      if (decision.targets.length !== n) throw new Error(`bench routing: ${decision.targets.length} of ${n} eligible`)
      // Both sides build their Effect per decision, as a caller does: work done when `resolve` is
      // called (rather than when its Effect runs) is counted too.
      const raw = await paired(
        profile,
        () => Effect.runSync(Effect.succeed(decision)),
        () => Effect.runSync(stack.gateway.router.resolve(cmd))
      )
      points.push({ targets: n, decisionUs: raw.diffP50, p99Us: raw.diffP99, raw })
    } finally {
      await stack.dispose()
    }
  }
  const growth = points.slice(1).map((p, i) => ({
    from: points[i]!.targets,
    to: p.targets,
    ratio: p.decisionUs / points[i]!.decisionUs
  }))
  return { points, growth }
}
