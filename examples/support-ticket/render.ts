/**
 * Terminal rendering of calls: the decision, an attempt timeline on a shared time axis (a small
 * Gantt chart), the outcome, usage, cost and versions; and the summary table. Colors only when
 * asked (a TTY without `NO_COLOR`).
 */
import type { AttemptRecord, CallRecord } from "@modelgate/core/ModelResult"

export interface Style {
  readonly bold: (s: string) => string
  readonly dim: (s: string) => string
  readonly green: (s: string) => string
  readonly red: (s: string) => string
  readonly yellow: (s: string) => string
  readonly cyan: (s: string) => string
  readonly magenta: (s: string) => string
}

const sgr = (open: number, close: number) => (s: string) => `\u001b[${open}m${s}\u001b[${close}m`

/** Where a scenario prints: the readable report in `style` (or JSON lines when `json`), through `write`. */
export interface Output {
  readonly json: boolean
  readonly style: Style
  /** Writes text to the output as is (the caller adds no newline). */
  readonly write: (text: string) => void
}

/** Writes one line of the readable report; nothing in JSON mode. */
export const lineOf =
  (output: Output) =>
  (s = ""): void => {
    if (!output.json) output.write(`${s}\n`)
  }

export const colors: Style = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  green: sgr(32, 39),
  red: sgr(31, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
  magenta: sgr(35, 39)
}

const id = (s: string) => s
export const plain: Style = { bold: id, dim: id, green: id, red: id, yellow: id, cyan: id, magenta: id }

/** Colors on a TTY unless `NO_COLOR` is set (https://no-color.org). */
export const styleFor = (stream: { readonly isTTY?: boolean | undefined }, env: NodeJS.ProcessEnv): Style =>
  stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "") ? colors : plain

/** `model://openai/gpt-4.1@eu` → `openai/gpt-4.1@eu`. */
export const short = (ref: string): string => ref.replace(/^model:\/\//, "")

/**
 * Every amount with the same six decimals (a millionth of a dollar: the demo's calls cost from
 * $0.0001), so that figures in one column or line compare at a glance.
 */
export const usd = (n: number): string => `$${n.toFixed(6)}`

const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length))
const padStart = (s: string, n: number) => (s.length >= n ? s : " ".repeat(n - s.length) + s)

/** What one attempt's outcome means, in words. */
export const attemptOutcome = (a: AttemptRecord, mode: "generate" | "stream" | "embed"): string => {
  const status = a.httpStatus !== undefined && a.httpStatus !== 200 ? `${a.httpStatus} ` : ""
  switch (a.outcome) {
    case "success":
      return "ok"
    case "rate_limited":
      return `${status}rate limited${a.retryAfterMs !== undefined ? `, retry-after ${Math.round(a.retryAfterMs / 1000)} s` : ""}`
    case "unavailable":
      return `${status}unavailable`
    case "timeout":
      // A stream that ended before the attempt's own bound never produced a first token in time.
      return mode === "stream" && a.latencyMs < a.timeoutMs - 1
        ? `no first token after ${Math.round(a.latencyMs)} ms (TTFT limit)`
        : `timed out after ${Math.round(a.latencyMs)} ms${a.possiblyProcessed ? ", may have been processed" : ""}`
    case "invalid_output":
      return "invalid output (schema)"
    case "invalid_request":
      return `${status}invalid request`
    case "rejected":
      return `${status}rejected`
    case "refusal":
      return "refused by the model"
    case "cancelled":
      return "cancelled"
    case "incomplete":
      return "stream cut after first token"
  }
}

const isFailure = (a: AttemptRecord) => a.outcome !== "success"

/**
 * One line per attempt on the call's time axis, with the instant the caller got its answer.
 */
export const timeline = (record: CallRecord, style: Style, width = 36): Array<string> => {
  const e = record.evidence
  const total = Math.max(1, e.totalLatencyMs, ...e.attempts.map((a) => a.startOffsetMs + a.latencyMs))
  const col = (ms: number) => Math.min(width, Math.max(0, Math.round((ms / total) * width)))
  const labelWidth = Math.max(24, ...e.attempts.map((a) => short(a.target).length + 3))
  const lines: Array<string> = []
  lines.push(`${" ".repeat(labelWidth + 2)}${style.dim(`0 ms${padStart(`${Math.round(total)} ms`, width - 4)}`)}`)
  for (const a of e.attempts) {
    const start = col(a.startOffsetMs)
    const end = Math.max(start + 1, col(a.startOffsetMs + a.latencyMs))
    const bar = "█".repeat(end - start)
    const colored =
      a.outcome === "success" ? style.green(bar) : a.outcome === "timeout" ? style.yellow(bar) : style.red(bar)
    const track = `${style.dim("·".repeat(start))}${colored}${style.dim("·".repeat(width - end))}`
    const when = `${padStart(String(Math.round(a.startOffsetMs)), 5)} → ${padStart(String(Math.round(a.startOffsetMs + a.latencyMs)), 5)} ms`
    const outcome = attemptOutcome(a, record.mode)
    lines.push(
      `${pad(`${short(a.target)} #${a.attempt}`, labelWidth)}  ${track}  ${style.dim(when)}  ${isFailure(a) ? style.red(outcome) : style.green(outcome)}`
    )
  }
  const answered = col(e.totalLatencyMs)
  lines.push(
    `${pad("caller", labelWidth)}  ${style.dim("·".repeat(Math.max(0, answered - 1)))}${style.bold("▲")}${" ".repeat(Math.max(0, width - answered))}  ${style.dim(`answer at ${Math.round(e.totalLatencyMs)} ms`)}`
  )
  return lines
}

/** The decision: eligible targets in order, excluded targets with reasons. */
export const decision = (record: CallRecord, style: Style): Array<string> => {
  const e = record.evidence
  const lines = [
    `eligible  ${e.eligible.length === 0 ? style.dim("(none)") : e.eligible.map(short).join(style.dim(" → "))}`
  ]
  for (const x of e.excluded)
    lines.push(`excluded  ${style.yellow(short(x.target))}  ${x.reason}  ${style.dim(x.detail)}`)
  return lines
}

export const versions = (record: CallRecord): string => {
  const e = record.evidence
  return [
    e.model !== undefined
      ? `model ${e.model}${e.modelVersion !== undefined && e.modelVersion !== e.model ? ` (${e.modelVersion})` : ""}`
      : undefined,
    `policy ${e.policyVersion}`,
    `prompt ${e.promptId}@${e.promptVersion}`,
    e.schemaVersion !== undefined ? `schema v${e.schemaVersion}` : undefined,
    e.pricingVersion !== undefined ? `prices ${e.pricingVersion}` : undefined
  ]
    .filter((s) => s !== undefined)
    .join(" · ")
}

export const usage = (record: CallRecord): string => {
  const e = record.evidence
  return `in ${e.usage.inputTokens} · out ${e.usage.outputTokens} tokens · cost ${usd(e.cost.actual)} (reserved ${usd(e.cost.reserved)})`
}

/** Per-workflow totals. */
export interface Totals {
  calls: number
  ok: number
  fallbacks: number
  retries: number
  degraded: number
  failed: number
  cost: number
}

export const totals = (records: ReadonlyArray<CallRecord>): Map<string, Totals> => {
  const out = new Map<string, Totals>()
  for (const r of records) {
    const t = out.get(r.evidence.workflow) ?? {
      calls: 0,
      ok: 0,
      fallbacks: 0,
      retries: 0,
      degraded: 0,
      failed: 0,
      cost: 0
    }
    t.calls++
    if (r.outcome === "success") t.ok++
    if (r.outcome === "degraded") t.degraded++
    if (r.outcome !== "success" && r.outcome !== "degraded") t.failed++
    if (r.evidence.fallbackUsed) t.fallbacks++
    t.retries += r.evidence.retryCount
    t.cost += r.evidence.cost.actual
    out.set(r.evidence.workflow, t)
  }
  return out
}

export const summaryTable = (records: ReadonlyArray<CallRecord>, style: Style): Array<string> => {
  const rows = [...totals(records).entries()]
  const header = ["workflow", "calls", "ok", "fallbacks", "retries", "degraded", "failed", "cost"]
  const sum: Totals = { calls: 0, ok: 0, fallbacks: 0, retries: 0, degraded: 0, failed: 0, cost: 0 }
  for (const [, t] of rows) {
    sum.calls += t.calls
    sum.ok += t.ok
    sum.fallbacks += t.fallbacks
    sum.retries += t.retries
    sum.degraded += t.degraded
    sum.failed += t.failed
    sum.cost += t.cost
  }
  const cells = (name: string, t: Totals) => [
    name,
    String(t.calls),
    String(t.ok),
    String(t.fallbacks),
    String(t.retries),
    String(t.degraded),
    String(t.failed),
    usd(t.cost)
  ]
  const body = rows.map(([name, t]) => cells(name, t))
  const all = [header, ...body, cells("total", sum)]
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)))
  const fmt = (r: ReadonlyArray<string>) =>
    r.map((c, i) => (i === 0 ? pad(c, widths[i] ?? 0) : padStart(c, widths[i] ?? 0))).join("  ")
  const rule = style.dim("─".repeat(widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1)))
  return [style.bold(fmt(header)), rule, ...body.map(fmt), rule, style.bold(fmt(cells("total", sum)))]
}
