/**
 * The hot loop of scored selection: each eligible target's quality, latency and cost terms and its
 * total, with numbers kept in typed arrays and no object made per target. A route target's class
 * terms, prices and limits are read from its workflow's table (`ClassTerms`, computed once per
 * compiled workflow); any other target's from the target itself, with the same arithmetic.
 */
import { healthScore, type RouteHealth, statusOf } from "../healthRecord.js"
import type { ModelTarget, TargetRef } from "../../ModelTarget.js"
import { costAt, listPrice } from "../../Pricing.js"
import { inputTokensAt } from "../affordable.js"
import type { HealthStatus } from "../../RouteDecision.js"
import { splitUnitsOfTokens, unitsPerCurrency, unitsPerMillion, wholeUnitsPerToken } from "../costUnits.js"
import { termCount } from "./lazyScores.js"
import type { ClassTerms, PriceSheets } from "./types.js"

/** Quality fit of a class when no verified score applies; a target without one scores `unknownFit`. */
export const classQuality = { low: 0.5, standard: 0.75, high: 0.9 } as const
const latencyFit = { fast: 1, medium: 0.6, slow: 0.3 } as const
export const unknownFit = 0.5

/** A term or total to 4 decimals. */
export const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

/** The latency term of a target's latency class (no observation). */
export const latencyClassFit = (target: ModelTarget): number => {
  const tier = target.classes?.latency
  return tier === "fast"
    ? latencyFit.fast
    : tier === "medium"
      ? latencyFit.medium
      : tier === "slow"
        ? latencyFit.slow
        : unknownFit
}

/** The observed p95 the latency term reads: smoothed TTFT for streams, smoothed latency otherwise. */
const observedP95 = (record: RouteHealth, stream: boolean): number | undefined =>
  stream
    ? (record.ttftP95SmoothedMs ?? record.ttftP95Ms ?? record.latencyP95SmoothedMs ?? record.latencyP95Ms)
    : (record.latencyP95SmoothedMs ?? record.latencyP95Ms)

/** What one ranking reads of its workflow and command, resolved once. */
export interface Settings {
  readonly wq: number
  readonly wl: number
  readonly wc: number
  readonly wh: number
  readonly wa: number
  readonly deprecatedPenalty: number
  readonly segment: string | undefined
  readonly preferredRank: number
  readonly timeLeft: number
  readonly stream: boolean
  readonly adjust: ((target: ModelTarget, segment: string | undefined) => number | undefined) | undefined
}

/** What {@link termsOf} reads besides the targets and the settings. */
export interface TermsInput {
  /** The workflow's route targets, which `table` describes by position. */
  readonly route: ReadonlyArray<ModelTarget>
  readonly table: ClassTerms | undefined
  /** The table's class terms apply (the workflow's own segment and preferred class, no adjustment). */
  readonly classes: boolean
  /**
   * The route position of each target (−1: not a route target); omitted: a target is its route's
   * target at the same position, or none.
   */
  readonly at: ArrayLike<number> | undefined
  readonly inputTokens: number | undefined
  /** The call's output cap (the command's and the workflow's). */
  readonly outputCap: number
  readonly health: ReadonlyArray<RouteHealth | undefined> | undefined
  readonly sticky: TargetRef | undefined
  /** The quality term of a target the table's class terms do not cover. */
  readonly qualityOf: (target: ModelTarget) => number
}

/** The terms and totals of every target (the numbers a ranking orders by). */
export interface Terms {
  /** quality, latency, cost per target */
  readonly x: Float64Array
  /** Totals × 10⁴ (exact integers): the sort keys. */
  readonly totals: Int32Array
  readonly stickyAt: number
  readonly statuses: Array<HealthStatus | undefined> | undefined
  readonly healthAt: Array<number | undefined> | undefined
  readonly observedAt: Array<number | undefined> | undefined
  /** The totals are already in descending order. */
  readonly sorted: boolean
  /** A fast-latency target fits the time left. */
  readonly anyFast: boolean
  /** Targets whose observed p95 does not fit the time left (allocated only when one does not). */
  readonly slow: Array<boolean> | undefined
}

/**
 * The route position of each of `targets` under `input` (−1: not a route target): `input.at`, or
 * the target's own position where the route holds the same target there.
 */
const positionsOf = (input: TermsInput, targets: ReadonlyArray<ModelTarget>): ArrayLike<number> | undefined => {
  if (input.table === undefined) return undefined
  if (input.at !== undefined) return input.at
  const route = input.route
  if (targets === route) return undefined
  const n = targets.length
  let same = n <= route.length
  for (let i = 0; same && i < n; i++) same = route[i] === targets[i]
  if (same) return undefined
  const at = new Int32Array(n)
  for (let i = 0; i < n; i++) at[i] = i < route.length && route[i] === targets[i] ? i : -1
  return at
}

/** The price sheets of `route` (targets with the same prices and limits share one) and its size bounds. */
export const sheetsOf = (
  route: ReadonlyArray<ModelTarget>
): Pick<ClassTerms, "sheet" | "sheets" | "maxSafety" | "minWindow"> => {
  const n = route.length
  const sheet = new Int32Array(n)
  const byKey = new Map<string, number>()
  const values: Array<ReadonlyArray<number>> = []
  let maxSafety = 0
  let minWindow = Infinity
  for (let i = 0; i < n; i++) {
    const t = route[i]!
    const input = unitsPerMillion(t.pricing.inputPerMillion)
    const output = unitsPerMillion(t.pricing.outputPerMillion)
    const inputPerToken = wholeUnitsPerToken(input)
    const outputPerToken = wholeUnitsPerToken(output)
    const row = [
      t.tokenizerSafetyFactor,
      t.capabilities.contextWindow,
      t.capabilities.maxOutputTokens,
      inputPerToken,
      input - inputPerToken * 1_000_000,
      outputPerToken,
      output - outputPerToken * 1_000_000,
      listPrice(t)
    ]
    const key = row.join(",")
    let k = byKey.get(key)
    if (k === undefined) {
      k = values.length
      byKey.set(key, k)
      values.push(row)
    }
    sheet[i] = k
    maxSafety = Math.max(maxSafety, t.tokenizerSafetyFactor)
    minWindow = Math.min(minWindow, t.capabilities.contextWindow)
  }
  const column = (c: number) => Float64Array.from(values, (row) => row[c]!)
  const sheets: PriceSheets = {
    count: values.length,
    safety: column(0),
    window: column(1),
    maxOutput: column(2),
    inputPerToken: column(3),
    inputRest: column(4),
    outputPerToken: column(5),
    outputRest: column(6),
    listPrice: column(7)
  }
  return { sheet, sheets, maxSafety, minWindow }
}

/**
 * The price of each sheet on this call, then (from `count` on) its cost term once the cheapest is
 * known ({@link sheetCosts}): the worst case of the call when the input was counted, else the
 * per-million list price (`Pricing.costAt`, `Pricing.listPrice`).
 */
const sheetPrices = (sheets: PriceSheets, inputTokens: number | undefined, outputCap: number): Float64Array => {
  const k = sheets.count
  const out = new Float64Array(2 * k)
  for (let s = 0; s < k; s++) {
    if (inputTokens === undefined) out[s] = sheets.listPrice[s]!
    else {
      const tokens = Math.ceil(inputTokens * sheets.safety[s]!)
      // The output within the target's limit and what is left of its window after the input.
      const output = Math.max(0, Math.min(outputCap, sheets.maxOutput[s]!, sheets.window[s]! - tokens))
      out[s] =
        (splitUnitsOfTokens(tokens, sheets.inputPerToken[s]!, sheets.inputRest[s]!) +
          splitUnitsOfTokens(output, sheets.outputPerToken[s]!, sheets.outputRest[s]!)) /
        unitsPerCurrency
    }
  }
  return out
}

/** The cost term of a price: the cheapest candidate's price over it (1 for a free one). */
const costTerm = (cheapest: number, price: number): number => (price <= 0 ? 1 : round4(cheapest / price))

/** Each sheet's cost term after its price in `prices` ({@link sheetPrices}). */
const sheetCosts = (prices: Float64Array, count: number, cheapest: number): void => {
  for (let s = 0; s < count; s++) prices[count + s] = costTerm(cheapest, prices[s]!)
}

/**
 * Each target's price into the cost slot of `x` (a route target's from its sheet's, `sheet`);
 * returns the cheapest. `at`: the route positions, `undefined` when every target is the route's at
 * its own position.
 */
const pricesInto = (
  x: Float64Array,
  targets: ReadonlyArray<ModelTarget>,
  input: TermsInput,
  at: ArrayLike<number> | undefined,
  sheetPrice: Float64Array | undefined
): number => {
  const { table, inputTokens, outputCap } = input
  let cheapest = Infinity
  for (let i = 0; i < targets.length; i++) {
    const r = table === undefined ? -1 : at === undefined ? i : at[i]!
    let price: number
    if (r >= 0 && table !== undefined && sheetPrice !== undefined) price = sheetPrice[table.sheet[r]!]!
    else {
      const t = targets[i]!
      if (inputTokens === undefined) price = listPrice(t)
      else {
        const tokens = inputTokensAt(inputTokens, t)
        const output = Math.min(outputCap, t.capabilities.maxOutputTokens, t.capabilities.contextWindow - tokens)
        price = costAt(t, tokens, Math.max(0, output))
      }
    }
    x[i * termCount + 2] = price
    if (price < cheapest) cheapest = price
  }
  return cheapest
}

/** Hot path (once per eligible target per call): numbers in typed arrays, no object per target. */
export const termsOf = (targets: ReadonlyArray<ModelTarget>, s: Settings, input: TermsInput): Terms => {
  const n = targets.length
  const x = new Float64Array(n * termCount)
  const at = positionsOf(input, targets)
  const sheets = input.table?.sheets
  const sheetPrice = sheets === undefined ? undefined : sheetPrices(sheets, input.inputTokens, input.outputCap)
  const cheapest = pricesInto(x, targets, input, at, sheetPrice)
  if (sheets !== undefined && sheetPrice !== undefined) sheetCosts(sheetPrice, sheets.count, cheapest)
  const totals = new Int32Array(n)
  const { health: healths, sticky, table } = input
  const classes = input.classes ? table : undefined
  const { wq, wl, wc, wh, wa } = s
  let stickyAt = -1
  let statuses: Array<HealthStatus | undefined> | undefined
  let healthAt: Array<number | undefined> | undefined
  let observedAt: Array<number | undefined> | undefined
  let sorted = true
  let previous = Infinity
  let anyFast = false
  let slow: Array<boolean> | undefined
  for (let i = 0; i < n; i++) {
    const t = targets[i]!
    const o = i * termCount
    const r = table === undefined ? -1 : at === undefined ? i : at[i]!
    const hit = classes !== undefined && r >= 0
    const quality = hit ? classes.quality[r]! : input.qualityOf(t)
    const classLatency = hit ? classes.latency[r]! : latencyClassFit(t)
    const fastClass = hit ? classes.fast[r] === 1 : t.classes?.latency === "fast"
    const deprecated = r >= 0 && table !== undefined ? table.deprecated[r] === 1 : t.status === "deprecated"
    const record = healths?.[i]
    const observed = record === undefined ? undefined : observedP95(record, s.stream)
    let latency: number
    if (observed === undefined) {
      latency = classLatency
    } else if (observed >= s.timeLeft) {
      latency = 0
      slow ??= new Array<boolean>(n).fill(false)
      slow[i] = true
    } else {
      latency = round4(1 - observed / s.timeLeft)
    }
    if (fastClass && slow?.[i] !== true) anyFast = true
    const cost =
      r >= 0 && table !== undefined && sheetPrice !== undefined
        ? sheetPrice[table.sheets.count + table.sheet[r]!]!
        : costTerm(cheapest, x[o + 2]!)
    const minus = deprecated ? s.deprecatedPenalty : 0
    let health = 1
    let status: HealthStatus | undefined
    if (record !== undefined) {
      health = healthScore(record)
      status = statusOf(record)
      healthAt ??= new Array<number | undefined>(n)
      healthAt[i] = health
      statuses ??= new Array<HealthStatus | undefined>(n)
      statuses[i] = status
      if (observed !== undefined) {
        observedAt ??= new Array<number | undefined>(n)
        observedAt[i] = observed
      }
    }
    const affinity = sticky !== undefined && t.ref === sticky && (status === undefined || status === "HEALTHY") ? 1 : 0
    if (affinity === 1) stickyAt = i
    const totalInt = Math.round(
      (wq * quality + wl * latency + wc * cost + wh * health + wa * affinity - minus) * 10_000
    )
    totals[i] = totalInt
    x[o] = quality
    x[o + 1] = latency
    x[o + 2] = cost
    if (totalInt > previous) sorted = false
    previous = totalInt
  }
  return { x, totals, stickyAt, statuses, healthAt, observedAt, sorted, anyFast, slow }
}
