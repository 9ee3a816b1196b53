/**
 * The evaluation as text: one row per policy (quality, gap to the oracle, invalid-output rate,
 * cost, cost per success, latency, regret) and a bar chart of quality against cost.
 */
import type { Report } from "./evaluate.js"

const pct = (x: number) => `${(x * 100).toFixed(1)}%`
const usd = (x: number) => (Number.isFinite(x) ? `$${x.toFixed(4)}` : "—")
const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length))
const lpad = (s: string, n: number) => (s.length >= n ? s : " ".repeat(n - s.length) + s)
const bar = (share: number, width: number, fill: string) => {
  const full = Math.max(0, Math.min(width, Math.round(share * width)))
  return fill.repeat(full) + "·".repeat(width - full)
}

/** The report as lines of text. */
export const render = (report: Report): Array<string> => {
  const lines: Array<string> = []
  const first = report.policies[0]
  lines.push(`Routing evaluation · dataset ${report.dataset} · ${first?.tasks ?? 0} tasks`)
  lines.push(
    `oracle (per task the cheapest eligible target that passed): quality ${pct(report.oracle.quality)} · cost ${usd(report.oracle.cost)}`
  )
  lines.push("")
  const header = [
    pad("policy", 27),
    lpad("quality", 8),
    lpad("Δ oracle", 9),
    lpad("invalid", 8),
    lpad("failed", 7),
    lpad("cost", 9),
    lpad("× oracle", 9),
    lpad("$/success", 10),
    lpad("p50 ms", 7),
    lpad("p95 ms", 7),
    lpad("regret", 7)
  ].join(" ")
  lines.push(header)
  lines.push("-".repeat(header.length))
  for (const p of report.policies) {
    lines.push(
      [
        pad(p.policy, 27),
        lpad(pct(p.quality), 8),
        lpad(`${p.qualityGap > 0 ? "−" : "+"}${(Math.abs(p.qualityGap) * 100).toFixed(1)}pp`, 9),
        lpad(pct(p.invalidOutputRate), 8),
        lpad(String(p.failed), 7),
        lpad(usd(p.cost), 9),
        lpad(Number.isFinite(p.costRatio) ? `${p.costRatio.toFixed(2)}×` : "—", 9),
        lpad(usd(p.costPerSuccess), 10),
        lpad(String(p.p50LatencyMs), 7),
        lpad(String(p.p95LatencyMs), 7),
        lpad(String(p.regret), 7)
      ].join(" ")
    )
  }
  lines.push("")
  lines.push("quality (█, of all tasks) against cost (▓, of the most expensive policy)")
  const maxCost = Math.max(...report.policies.map((p) => p.cost), report.oracle.cost)
  const chart = (name: string, quality: number, cost: number) =>
    `${pad(name, 27)} ${bar(quality, 30, "█")} ${lpad(pct(quality), 6)}  ${bar(maxCost === 0 ? 0 : cost / maxCost, 20, "▓")} ${usd(cost)}`
  lines.push(chart("oracle", report.oracle.quality, report.oracle.cost))
  for (const p of report.policies) lines.push(chart(p.policy, p.quality, p.cost))
  lines.push("")
  lines.push("first choice per policy:")
  for (const p of report.policies) {
    const picks = Object.entries(p.selected)
      .sort((a, b) => b[1] - a[1])
      .map(([ref, count]) => `${ref.replace(/^model:\/\//, "")} ${count}`)
      .join(", ")
    lines.push(`  ${pad(p.policy, 27)} ${picks}`)
  }
  return lines
}
