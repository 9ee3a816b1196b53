/**
 * Effect metrics in the Prometheus text exposition format, version 0.0.4: one family per metric
 * name (its `# HELP` from the metric's description, its `# TYPE`), then one sample line per label
 * set. Names are sanitized to Prometheus' rules (`modelgate.call.duration_ms` →
 * `modelgate_call_duration_ms`), label names likewise, label values escaped (`\\`, `\"`, `\n`).
 *
 * - counter (incremental) → `counter`, the name with `_total` appended (once);
 *   a counter that may go down → `gauge`
 * - gauge → `gauge`
 * - histogram → `histogram`: cumulative `_bucket{le="…"}` up to `le="+Inf"`, `_sum`, `_count`
 * - frequency → `counter` (`_total`), one sample per word in a `key` label
 * - summary → `summary`: `{quantile="…"}` samples (`NaN` when not known yet), `_sum`, `_count`
 *
 * A second metric whose sanitized family name is taken by another kind is left out (two `# TYPE`
 * lines for one name would make the whole scrape invalid).
 *
 * @internal
 */
import { MetricKeyType, type MetricLabel, type MetricPair, MetricState, Option } from "effect"

/** The content type of the format. */
export const contentType = "text/plain; version=0.0.4; charset=utf-8"

type Kind = "counter" | "gauge" | "histogram" | "summary"

/** A metric name under Prometheus' rules: `[a-zA-Z_:][a-zA-Z0-9_:]*`. */
export const metricName = (name: string): string => {
  const sanitized = name.replace(/[^a-zA-Z0-9_:]/g, "_")
  return /^[0-9]/.test(sanitized) || sanitized.length === 0 ? `_${sanitized}` : sanitized
}

/** A label name under Prometheus' rules: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved). */
export const labelName = (name: string): string => {
  const sanitized = name.replace(/[^a-zA-Z0-9_]/g, "_")
  const leading = /^[0-9]/.test(sanitized) || sanitized.length === 0 ? `_${sanitized}` : sanitized
  return leading.startsWith("__") ? `x${leading}` : leading
}

/** A label value inside double quotes: backslash, double quote and line feed escaped. */
export const labelValue = (value: string): string =>
  value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

/** HELP text: backslash and line feed escaped. */
const helpText = (text: string): string => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

/** A sample value: Go float syntax (`+Inf`, `-Inf`, `NaN`), bigints as their digits. */
export const sampleValue = (value: number | bigint): string => {
  if (typeof value === "bigint") return value.toString()
  if (Number.isNaN(value)) return "NaN"
  if (value === Number.POSITIVE_INFINITY) return "+Inf"
  if (value === Number.NEGATIVE_INFINITY) return "-Inf"
  return String(value)
}

/** `{a="x",b="y"}` of `tags` (sanitized, first of duplicates kept) and `extra`; empty without labels. */
const labelSet = (tags: ReadonlyArray<MetricLabel.MetricLabel>, extra?: readonly [string, string]): string => {
  const seen = new Set<string>()
  const parts: Array<string> = []
  for (const tag of tags) {
    const name = labelName(tag.key)
    if (seen.has(name) || name === extra?.[0]) continue
    seen.add(name)
    parts.push(`${name}="${labelValue(tag.value)}"`)
  }
  if (extra !== undefined) parts.push(`${extra[0]}="${labelValue(extra[1])}"`)
  return parts.length === 0 ? "" : `{${parts.join(",")}}`
}

interface Family {
  readonly name: string
  readonly kind: Kind
  readonly help: string | undefined
  readonly lines: Array<string>
}

/** The family name and kind of a metric, or `undefined` for a key type this renderer does not know. */
const familyOf = (key: MetricPair.MetricPair.Untyped["metricKey"]): { name: string; kind: Kind } | undefined => {
  const base = metricName(key.name)
  const keyType: unknown = key.keyType
  const total = base.endsWith("_total") ? base : `${base}_total`
  if (MetricKeyType.isCounterKey(keyType))
    return keyType.incremental ? { name: total, kind: "counter" } : { name: base, kind: "gauge" }
  if (MetricKeyType.isFrequencyKey(keyType)) return { name: total, kind: "counter" }
  if (MetricKeyType.isGaugeKey(keyType)) return { name: base, kind: "gauge" }
  if (MetricKeyType.isHistogramKey(keyType)) return { name: base, kind: "histogram" }
  if (MetricKeyType.isSummaryKey(keyType)) return { name: base, kind: "summary" }
  return undefined
}

/** The sample lines of one metric pair in family `name`. */
const samplesOf = (name: string, pair: MetricPair.MetricPair.Untyped): ReadonlyArray<string> => {
  const tags = pair.metricKey.tags
  const state: unknown = pair.metricState
  if (MetricState.isCounterState(state)) return [`${name}${labelSet(tags)} ${sampleValue(state.count)}`]
  if (MetricState.isGaugeState(state)) return [`${name}${labelSet(tags)} ${sampleValue(state.value)}`]
  if (MetricState.isFrequencyState(state)) {
    return [...state.occurrences].map(([word, n]) => `${name}${labelSet(tags, ["key", word])} ${sampleValue(n)}`)
  }
  if (MetricState.isHistogramState(state)) {
    const buckets = state.buckets.map(
      ([le, n]) => `${name}_bucket${labelSet(tags, ["le", sampleValue(le)])} ${sampleValue(n)}`
    )
    const last = state.buckets.at(-1)
    if (last === undefined || last[0] !== Number.POSITIVE_INFINITY) {
      buckets.push(`${name}_bucket${labelSet(tags, ["le", "+Inf"])} ${sampleValue(state.count)}`)
    }
    return [...buckets, ...totals(name, tags, state)]
  }
  if (MetricState.isSummaryState(state)) {
    const quantiles = state.quantiles.map(
      ([q, value]) =>
        `${name}${labelSet(tags, ["quantile", sampleValue(q)])} ${sampleValue(Option.getOrElse(value, () => Number.NaN))}`
    )
    return [...quantiles, ...totals(name, tags, state)]
  }
  return []
}

const totals = (
  name: string,
  tags: ReadonlyArray<MetricLabel.MetricLabel>,
  state: { readonly sum: number; readonly count: number }
) => [
  `${name}_sum${labelSet(tags)} ${sampleValue(state.sum)}`,
  `${name}_count${labelSet(tags)} ${sampleValue(state.count)}`
]

/**
 * The exposition of `pairs` (e.g. `Metric.snapshot`'s), families in name order, each ending in a
 * line feed.
 */
export const render = (pairs: Iterable<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, Family>()
  for (const pair of pairs) {
    const family = familyOf(pair.metricKey)
    if (family === undefined) continue
    let entry = families.get(family.name)
    if (entry === undefined) {
      entry = { ...family, help: Option.getOrUndefined(pair.metricKey.description), lines: [] }
      families.set(family.name, entry)
    } else if (entry.kind !== family.kind) continue
    entry.lines.push(...samplesOf(family.name, pair))
  }
  let out = ""
  for (const name of [...families.keys()].sort()) {
    const family = families.get(name)
    if (family === undefined || family.lines.length === 0) continue
    if (family.help !== undefined) out += `# HELP ${name} ${helpText(family.help)}\n`
    out += `# TYPE ${name} ${family.kind}\n${family.lines.join("\n")}\n`
  }
  return out
}
