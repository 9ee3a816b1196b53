/**
 * A strict reader of the Prometheus text exposition format 0.0.4, for tests: it throws on the
 * first line that breaks the grammar (names, label syntax and escapes, values), a `# TYPE` given
 * twice or after its samples, a sample outside its family, a duplicate series, or a histogram whose
 * buckets are not cumulative up to `le="+Inf"` equal to its `_count`.
 */

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Family {
  readonly type: string
  readonly help: string | undefined
  readonly samples: Array<Sample>
}

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^\n]*)\})? (\S+)$/
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:\\[\\"n]|[^"\\\n])*)"(,|$)/y
const floatValue = /^(?:[+-]?Inf|NaN|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$/
const types = new Set(["counter", "gauge", "histogram", "summary", "untyped"])

const unescapeLabel = (text: string) => text.replace(/\\([\\"n])/g, (_, c: string) => (c === "n" ? "\n" : c))

const parseLabels = (text: string | undefined, line: string): Record<string, string> => {
  const labels: Record<string, string> = {}
  if (text === undefined || text === "") return labels
  labelPair.lastIndex = 0
  while (labelPair.lastIndex < text.length) {
    const start = labelPair.lastIndex
    const match = labelPair.exec(text)
    if (match === null || match.index !== start) throw new Error(`bad labels: ${line}`)
    const [, name = "", value = "", comma] = match
    if (name in labels) throw new Error(`label ${name} twice: ${line}`)
    labels[name] = unescapeLabel(value)
    if (comma === "" && labelPair.lastIndex < text.length) throw new Error(`bad labels: ${line}`)
  }
  return labels
}

const parseValue = (text: string, line: string): number => {
  if (!floatValue.test(text)) throw new Error(`bad value: ${line}`)
  return text.endsWith("Inf") ? (text.startsWith("-") ? -Infinity : Infinity) : Number(text)
}

const suffixes: Readonly<Record<string, ReadonlyArray<string>>> = {
  histogram: ["_bucket", "_sum", "_count"],
  summary: ["", "_sum", "_count"]
}

const belongs = (family: string, type: string, name: string) =>
  (suffixes[type] ?? [""]).some((suffix) => name === `${family}${suffix}`)

const seriesKey = (labels: Readonly<Record<string, string>>, without: string) =>
  JSON.stringify(
    Object.entries(labels)
      .filter(([k]) => k !== without)
      .sort(([a], [b]) => a.localeCompare(b))
  )

/** Buckets ascending in `le`, counts cumulative, the last `+Inf` and equal to `_count`, per series. */
const checkHistogram = (name: string, family: Family) => {
  const series = new Map<string, Array<Sample>>()
  for (const s of family.samples.filter((s) => s.name === `${name}_bucket`)) {
    const key = seriesKey(s.labels, "le")
    series.set(key, [...(series.get(key) ?? []), s])
  }
  for (const [key, buckets] of series) {
    const les = buckets.map((b) => parseValue(b.labels.le ?? "", `${name} le`))
    les.forEach((le, i) => {
      if (i > 0 && le <= (les[i - 1] ?? -Infinity)) throw new Error(`${name} ${key}: le not ascending`)
    })
    buckets.forEach((b, i) => {
      if (i > 0 && b.value < (buckets[i - 1]?.value ?? 0)) throw new Error(`${name} ${key}: not cumulative`)
    })
    if (les.at(-1) !== Infinity) throw new Error(`${name} ${key}: no +Inf bucket`)
    const count = family.samples.find((s) => s.name === `${name}_count` && seriesKey(s.labels, "") === key)
    if (count?.value !== buckets.at(-1)?.value) throw new Error(`${name} ${key}: +Inf bucket is not _count`)
  }
}

/** The families of an exposition, by name. */
export const parseExposition = (text: string): ReadonlyMap<string, Family> => {
  if (text.length > 0 && !text.endsWith("\n")) throw new Error("the exposition does not end in a line feed")
  const families = new Map<string, Family>()
  const helps = new Map<string, string>()
  const series = new Set<string>()
  let current: { readonly name: string; readonly family: Family } | undefined
  for (const line of text.split("\n").slice(0, -1)) {
    const comment = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
    if (comment !== null) {
      const [, kind, name = "", rest = ""] = comment
      if (!metricName.test(name)) throw new Error(`bad name: ${line}`)
      if (kind === "HELP") {
        if (helps.has(name)) throw new Error(`HELP twice: ${line}`)
        helps.set(
          name,
          rest.replace(/\\([\\n])/g, (_, c: string) => (c === "n" ? "\n" : c))
        )
        continue
      }
      if (!types.has(rest)) throw new Error(`bad type: ${line}`)
      if (families.has(name)) throw new Error(`TYPE twice or after samples: ${line}`)
      current = { name, family: { type: rest, help: helps.get(name), samples: [] } }
      families.set(name, current.family)
      continue
    }
    if (line.startsWith("#")) continue
    const match = sampleLine.exec(line)
    if (match === null) throw new Error(`bad line: ${JSON.stringify(line)}`)
    const [, name = "", labelText, valueText = ""] = match
    if (current === undefined || !belongs(current.name, current.family.type, name)) {
      throw new Error(`sample outside its family: ${line}`)
    }
    const sample = { name, labels: parseLabels(labelText, line), value: parseValue(valueText, line) }
    const id = `${name}${seriesKey(sample.labels, "")}`
    if (series.has(id)) throw new Error(`series twice: ${line}`)
    series.add(id)
    current.family.samples.push(sample)
  }
  for (const [name, family] of families) if (family.type === "histogram") checkHistogram(name, family)
  return families
}

/** The sum of the samples named `name` whose labels include `match` (0 when there are none). */
export const total = (
  families: ReadonlyMap<string, Family>,
  family: string,
  name: string,
  match: Readonly<Record<string, string>> = {}
): number =>
  (families.get(family)?.samples ?? [])
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)
