/**
 * §3 Routing scale: `gateway.router.resolve` with 10, 100 and 1,000 targets in one workflow's
 * route (all eligible, so every target is checked and listed), against an empty `runSync`; both
 * sides build their Effect per decision. The same with scored selection (`selection: "scored"`,
 * targets of mixed quality, latency and cost classes, a verified score on the workflow's segment
 * for every third one): every eligible target is scored and the route sorted by score.
 */
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { Workflow } from "@modelgate/core/Workflow"
import { Effect, Schema } from "effect"
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
  /** The same sizes under scored selection. */
  readonly scored: ReadonlyArray<RoutingPoint>
  /** decision(10n) / decision(n) for each 10× step. */
  readonly growth: ReadonlyArray<{ readonly from: number; readonly to: number; readonly ratio: number }>
}

const qualities = ["low", "standard", "high"] as const
const latencies = ["fast", "medium", "slow"] as const

const decodeTarget = Schema.decodeSync(ModelTarget)

/** A bench target with classes, a price and (every third one) a verified score, for scored selection. */
const scoredTarget = (i: number): ModelTarget => {
  const base = Schema.encodeSync(ModelTarget)(target(`model://bench/m${i}@eu`, "bench"))
  return decodeTarget({
    ...base,
    classes: { quality: qualities[i % 3]!, latency: latencies[(i >> 1) % 3]! },
    pricing: { ...base.pricing, inputPerMillion: 0.1 + (i % 7) * 0.3, outputPerMillion: 0.4 + (i % 5) * 1.2 },
    ...(i % 3 === 0
      ? { quality: { "bench.segment": { score: 0.6 + (i % 40) / 100, evalVersion: "e1", evaluatedAt: "2026-11-01" } } }
      : {})
  })
}

/** One decision size: the median per-decision time of `resolve` over `n` eligible targets. */
const point = async (profile: Profile, n: number, scored: boolean): Promise<RoutingPoint> => {
  const targets = Array.from({ length: n }, (_, i) =>
    scored ? scoredTarget(i) : target(`model://bench/m${i}@eu`, "bench")
  )
  const plain = workflow(
    "bench.route",
    targets.map((t) => t.ref)
  )
  const stack = await buildGateway({
    targets,
    workflows: [scored ? Workflow.make({ ...plain, selection: "scored", segment: "bench.segment" }) : plain],
    adapters: { bench: instantAdapter }
  })
  try {
    const cmd = command("bench.route")
    const decision = Effect.runSync(stack.gateway.router.resolve(cmd))
    if (decision.targets.length !== n) throw new Error(`bench routing: ${decision.targets.length} of ${n} eligible`)
    if (scored && decision.scores?.length !== n)
      throw new Error(`bench routing: ${decision.scores?.length} of ${n} scored`)
    // Both sides build their Effect per decision, as a caller does: work done when `resolve` is
    // called (rather than when its Effect runs) is counted too.
    const raw = await paired(
      profile,
      () => Effect.runSync(Effect.succeed(decision)),
      () => Effect.runSync(stack.gateway.router.resolve(cmd))
    )
    return { targets: n, decisionUs: raw.diffP50, p99Us: raw.diffP99, raw }
  } finally {
    await stack.dispose()
  }
}

export const run = async (profile: Profile): Promise<RoutingResults> => {
  const points: Array<RoutingPoint> = []
  const scored: Array<RoutingPoint> = []
  for (const n of [10, 100, 1_000]) {
    points.push(await point(profile, n, false))
    scored.push(await point(profile, n, true))
  }
  const growth = points.slice(1).map((p, i) => ({
    from: points[i]!.targets,
    to: p.targets,
    ratio: p.decisionUs / points[i]!.decisionUs
  }))
  return { points, scored, growth }
}
