/**
 * Offline routing evaluation: replays a labelled task set through the real router under
 * alternative policies (route order, selection, weights, tiers, candidates) and measures what each
 * policy would have cost and delivered, against an oracle that picks, per task, the cheapest
 * eligible target whose answer passed.
 *
 * The task set is data (`tasks.json`): per task its segment, data class, deadline, token counts and,
 * for each target, the outcome an offline eval run recorded (`pass`: the answer matched the label;
 * `valid`: it matched the output schema; its latency). Replaying a policy asks the router for its
 * decision (hard filters, order, scores), then walks the eligible targets as the gateway does
 * without repair: an invalid answer falls back to the next eligible target.
 */
import { GatewayConfig, Health, Pricing, Router } from "@modelgate/core"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { Workflow } from "@modelgate/core/Workflow"
import { Effect, Schema } from "effect"

const Outcome = Schema.Struct({ pass: Schema.Boolean, valid: Schema.Boolean, latencyMs: Schema.Number })

/** One labelled task and every target's recorded outcome on it. */
export const Task = Schema.Struct({
  id: Schema.String,
  segment: Schema.String,
  dataClass: Schema.String,
  deadlineMs: Schema.Number,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  outcomes: Schema.Record({ key: Schema.String, value: Outcome })
})
export type Task = typeof Task.Type

/** The task set file. */
export const Dataset = Schema.Struct({
  version: Schema.String,
  description: Schema.optional(Schema.String),
  tasks: Schema.Array(Task)
})
export type Dataset = typeof Dataset.Type

const decodeTarget = Schema.decodeUnknownSync(ModelTarget)
const verified = (scores: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(scores).map(([segment, score]) => [
      segment,
      { score, evalVersion: "routing-eval-2026-11", evaluatedAt: "2026-11-20" }
    ])
  )
const targetOf = (
  ref: string,
  fields: {
    readonly price: readonly [number, number]
    readonly quality: "low" | "standard" | "high"
    readonly latency: "fast" | "medium" | "slow"
    readonly dataClasses: ReadonlyArray<string>
    readonly verified: Record<string, number>
  }
): ModelTarget =>
  decodeTarget({
    ref,
    provider: ref.split("/")[2],
    model: ref.split("/")[3]!.split("@")[0],
    capabilities: {
      tools: true,
      structuredOutput: { mode: "json_schema" },
      contextWindow: 128_000,
      maxOutputTokens: 4096
    },
    regions: ["eu"],
    dataClasses: fields.dataClasses,
    pricing: {
      inputPerMillion: fields.price[0],
      outputPerMillion: fields.price[1],
      currency: "USD",
      pricingVersion: "prices-2026-11"
    },
    classes: { quality: fields.quality, latency: fields.latency },
    quality: verified(fields.verified)
  })

/** The registry the task set was labelled against (verified scores from an earlier eval version). */
export const targets: ReadonlyArray<ModelTarget> = [
  targetOf("model://local/llama-8b@eu", {
    price: [0.05, 0.1],
    quality: "low",
    latency: "fast",
    dataClasses: ["public", "internal", "confidential"],
    verified: { classify: 0.85, extract: 0.72 }
  }),
  targetOf("model://openai/mini@eu", {
    price: [0.4, 1.6],
    quality: "standard",
    latency: "fast",
    dataClasses: ["public", "internal"],
    verified: { classify: 0.92, extract: 0.88, reply: 0.8 }
  }),
  targetOf("model://mistral/medium@eu", {
    price: [1, 3],
    quality: "standard",
    latency: "medium",
    dataClasses: ["public", "internal", "confidential"],
    verified: { classify: 0.9, extract: 0.9, reply: 0.85, research: 0.7 }
  }),
  targetOf("model://anthropic/sonnet@eu", {
    price: [3, 15],
    quality: "high",
    latency: "slow",
    dataClasses: ["public", "internal", "confidential"],
    verified: { classify: 0.95, extract: 0.94, reply: 0.92, research: 0.88 }
  })
]

/** A routing policy to evaluate: the workflow's routing fields. */
export interface Policy {
  readonly name: string
  readonly workflow: Partial<typeof Workflow.Encoded>
}

const refs = {
  local: "model://local/llama-8b@eu",
  mini: "model://openai/mini@eu",
  medium: "model://mistral/medium@eu",
  sonnet: "model://anthropic/sonnet@eu"
} as const

/** The policies the example compares: today's order, cheap-first, strong-only, scored variants, a candidate. */
export const policies: ReadonlyArray<Policy> = [
  { name: "ordered mini→sonnet", workflow: { route: [refs.mini, refs.sonnet] } },
  { name: "ordered cheap-first", workflow: { route: [refs.local, refs.mini, refs.sonnet] } },
  { name: "strong only", workflow: { route: [refs.sonnet] } },
  { name: "scored (spec weights)", workflow: { route: [refs.local, refs.mini, refs.sonnet], selection: "scored" } },
  {
    name: "scored quality 0.7",
    workflow: {
      route: [refs.local, refs.mini, refs.sonnet],
      selection: "scored",
      scoring: { weights: { quality: 0.7, latency: 0.1, cost: 0.1, health: 0.05, affinity: 0.05 } }
    }
  },
  {
    name: "scored min tier standard",
    workflow: { route: [refs.local, refs.mini, refs.sonnet], selection: "scored", minQualityTier: "standard" }
  },
  {
    name: "scored + candidate medium",
    workflow: { route: [refs.local, refs.mini, refs.medium, refs.sonnet], selection: "scored" }
  }
]

/** What replaying one policy gave. */
export interface PolicyReport {
  readonly policy: string
  readonly tasks: number
  /** Tasks answered with a valid answer that passed, over all tasks. */
  readonly quality: number
  /** Invalid answers over attempts. */
  readonly invalidOutputRate: number
  /** Tasks with no valid answer from any eligible target (or no eligible target). */
  readonly failed: number
  readonly cost: number
  readonly costPerSuccess: number
  readonly p50LatencyMs: number
  readonly p95LatencyMs: number
  /** The oracle's quality minus this policy's (share of tasks). */
  readonly qualityGap: number
  /** This policy's cost over the oracle's. */
  readonly costRatio: number
  /** Tasks the oracle solved and this policy did not. */
  readonly regret: number
  /** How often each target was selected first. */
  readonly selected: Readonly<Record<string, number>>
}

/** The oracle: per task, the cheapest eligible target whose answer passed (and was valid). */
export interface OracleReport {
  readonly quality: number
  readonly cost: number
  readonly solved: number
}

/** The whole evaluation. */
export interface Report {
  readonly dataset: string
  readonly oracle: OracleReport
  readonly policies: ReadonlyArray<PolicyReport>
}

const decodeWorkflow = Schema.decodeUnknownSync(Workflow)
const decodeCommand = Schema.decodeUnknownSync(ModelCommand)

const workflowOf = (name: string, fields: Partial<typeof Workflow.Encoded>) =>
  decodeWorkflow({
    name,
    policyVersion: name,
    prompt: { id: "support.eval", version: "1" },
    route: [refs.sonnet],
    timeout: 60_000,
    regions: ["eu"],
    // Every route target may receive internal data; a confidential task narrows it per call.
    dataClass: "internal",
    ...fields
  })

/** The router of one workflow named `eval` over the eval's targets. */
const routerOf = (fields: Partial<typeof Workflow.Encoded>): Effect.Effect<Router.Service> => {
  const definition: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({ targets, workflows: [workflowOf("eval", fields)] }),
    schemas: {}
  }
  const problems = GatewayConfig.validate(definition, new Set(targets.map((t) => t.provider)))
  if (problems.length > 0) return Effect.dieMessage(`invalid policy: ${problems.map((p) => p.toString()).join("; ")}`)
  return Effect.provide(Router.make(GatewayConfig.compile(definition)), Health.layerOff)
}

/** A command shaped like the task: its segment, data class, deadline and (roughly) its input size. */
const commandOf = (task: Task): ModelCommand =>
  decodeCommand({
    workflow: "eval",
    tenant: "eval",
    messages: [
      { _tag: "system", content: "You answer support tickets." },
      { _tag: "user", content: "ticket ".repeat(Math.max(1, Math.round((task.inputTokens * 4) / 7))) }
    ],
    segment: task.segment,
    dataClass: task.dataClass,
    timeout: task.deadlineMs,
    maxOutputTokens: task.outputTokens
  })

const targetByRef = new Map<string, ModelTarget>(targets.map((t) => [t.ref, t]))
const costAt = (ref: string, task: Task): number => {
  const t = targetByRef.get(ref)
  return t === undefined ? 0 : Pricing.costAt(t, task.inputTokens, task.outputTokens)
}

/** Nearest-rank percentile of `values` (0 for none). */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!
}

/** One task under one router: the targets tried, in order, until a valid answer. */
const replay = (router: Router.Service, task: Task) =>
  Effect.map(Effect.either(router.resolve(commandOf(task))), (decided) => {
    const eligible = decided._tag === "Right" ? decided.right.eligible : []
    let cost = 0
    let latency = 0
    let attempts = 0
    let invalid = 0
    for (const ref of eligible) {
      const outcome = task.outcomes[ref]
      if (outcome === undefined) continue
      attempts++
      cost += costAt(ref, task)
      latency += outcome.latencyMs
      if (outcome.valid) return { eligible, first: eligible[0], cost, latency, attempts, invalid, pass: outcome.pass }
      invalid++
    }
    return { eligible, first: eligible[0], cost, latency, attempts, invalid, pass: false }
  })

/**
 * Replays every task of `dataset` under each of `candidates` (and the oracle) through the real
 * router; figures are computed from the dataset, nothing else.
 */
export const evaluate = (dataset: Dataset, candidates: ReadonlyArray<Policy> = policies): Effect.Effect<Report> =>
  Effect.gen(function* () {
    // The oracle may use every target the hard filters allow for the task.
    const all = yield* routerOf({ route: [refs.local, refs.mini, refs.medium, refs.sonnet] })
    let oracleCost = 0
    let solved = 0
    const solvable = new Set<string>()
    for (const task of dataset.tasks) {
      const decided = yield* Effect.either(all.resolve(commandOf(task)))
      const eligible = decided._tag === "Right" ? decided.right.eligible : []
      let best: string | undefined
      for (const ref of eligible) {
        const o = task.outcomes[ref]
        if (o === undefined || !o.pass || !o.valid) continue
        if (best === undefined || costAt(ref, task) < costAt(best, task)) best = ref
      }
      if (best !== undefined) {
        solved++
        solvable.add(task.id)
        oracleCost += costAt(best, task)
      } else {
        // Unsolvable: the oracle still pays for the cheapest eligible attempt.
        let cheapest = Infinity
        for (const ref of eligible) cheapest = Math.min(cheapest, costAt(ref, task))
        if (cheapest < Infinity) oracleCost += cheapest
      }
    }
    const n = dataset.tasks.length
    const oracle: OracleReport = { quality: n === 0 ? 0 : solved / n, cost: oracleCost, solved }
    const reports: Array<PolicyReport> = []
    for (const policy of candidates) {
      const router = yield* routerOf(policy.workflow)
      let cost = 0
      let attempts = 0
      let invalid = 0
      let passed = 0
      let failed = 0
      let regret = 0
      const latencies: Array<number> = []
      const selected: Record<string, number> = {}
      for (const task of dataset.tasks) {
        const r = yield* replay(router, task)
        cost += r.cost
        attempts += r.attempts
        invalid += r.invalid
        latencies.push(r.latency)
        if (r.first !== undefined) selected[r.first] = (selected[r.first] ?? 0) + 1
        if (r.pass) passed++
        else if (solvable.has(task.id)) regret++
        if (r.attempts === 0 || r.invalid === r.attempts) failed++
      }
      const quality = n === 0 ? 0 : passed / n
      reports.push({
        policy: policy.name,
        tasks: n,
        quality,
        invalidOutputRate: attempts === 0 ? 0 : invalid / attempts,
        failed,
        cost,
        costPerSuccess: passed === 0 ? Infinity : cost / passed,
        p50LatencyMs: percentile(latencies, 0.5),
        p95LatencyMs: percentile(latencies, 0.95),
        qualityGap: oracle.quality - quality,
        costRatio: oracle.cost === 0 ? Infinity : cost / oracle.cost,
        regret,
        selected
      })
    }
    return { dataset: dataset.version, oracle, policies: reports }
  })
