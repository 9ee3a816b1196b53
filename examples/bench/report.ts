/**
 * Targets (issues 8 and 11), PASS/MISS verdicts and the markdown table.
 */
import type { HttpLevel, HttpResults } from "./http.js"
import { httpSection } from "./httpReport.js"
import type { InProcessResults } from "./inProcess.js"
import type { MemoryResults } from "./memory.js"
import type { CacheResults } from "./cache.js"
import type { RedisResults } from "./redis.js"
import type { RoutingResults } from "./routing.js"
import type { TokenResults } from "./tokens.js"
import { fmt } from "./harness.js"

export interface Results {
  readonly profile: string
  readonly startedAt: string
  readonly durationSeconds: number
  readonly machine: {
    readonly node: string
    readonly platform: string
    readonly cpus: number
    readonly cpuModel: string
    readonly loadAverage: ReadonlyArray<number>
  }
  readonly inProcess: InProcessResults
  readonly http: HttpResults | { readonly skipped: string }
  readonly routing: RoutingResults
  readonly memory: MemoryResults
  readonly tokens: TokenResults
  /** Shared state on Redis (issue 15); skipped without `redis-server`. */
  readonly redis?: RedisResults | { readonly skipped: string } | undefined
  /** The response cache (issue 28): a hit's cost and its Redis round trips. */
  readonly cache?: CacheResults | undefined
}

export interface Verdict {
  readonly id: string
  readonly what: string
  readonly measured: number
  readonly unit: string
  readonly comparison: "<=" | ">="
  readonly target: number
  /** The baseline this figure is a difference or ratio against. */
  readonly baseline: string
  readonly pass: boolean
}

/** A verdict's target: the figure, its unit and which side of it passes. */
interface Bound {
  readonly comparison: "<=" | ">="
  readonly target: number
  readonly unit: string
}
const atMost = (target: number, unit: string): Bound => ({ comparison: "<=", target, unit })
const atLeast = (target: number, unit: string): Bound => ({ comparison: ">=", target, unit })

const check = (
  id: string,
  what: string,
  measured: number,
  { comparison, target, unit }: Bound,
  baseline: string
): Verdict => ({
  id,
  what,
  measured,
  unit,
  comparison,
  target,
  baseline,
  // A negative cost is noise in the measurement, never a pass.
  pass: Number.isFinite(measured) && measured >= 0 && (comparison === "<=" ? measured <= target : measured >= target)
})

/** The HTTP level at `concurrency`, if the HTTP section ran. */
const httpLevel = (r: Results, concurrency: number): HttpLevel | undefined =>
  "levels" in r.http ? r.http.levels.find((l) => l.concurrency === concurrency) : undefined

/**
 * The engine v2 targets (issue 11). Always listed: a figure that was not measured (section
 * skipped, case missing) is `NaN`, which is a MISS.
 */
/** HTTP CPU per call of the gateway over the official openai client's, at one HTTP level. */
const cpuVsOpenAi = (id: string, level: HttpLevel | undefined, concurrency: number, target: number): Verdict =>
  check(
    id,
    `HTTP CPU per call, gateway / official openai client, concurrency ${concurrency}`,
    level?.gateway.cpuVsOpenAi ?? Number.NaN,
    atMost(target, "×"),
    level === undefined
      ? "not measured"
      : `openai client ${fmt(level.openai.cpuUsPerCall.median)} µs/call, gateway ${fmt(level.gateway.cpuUsPerCall.median)} µs/call, raw undici ${fmt(level.undici.cpuUsPerCall.median)} µs/call`
  )

/** The per-decision verdict of the largest routing point measured (none when none was). */
const lastResolve = (
  id: string,
  points: ReadonlyArray<{ readonly targets: number; readonly decisionUs: number }>,
  selection: string
): ReadonlyArray<Verdict> => {
  const last = points[points.length - 1]
  return last === undefined
    ? []
    : [
        check(
          id,
          `resolve at ${last.targets} targets${selection}, per decision`,
          last.decisionUs,
          atMost(50, "µs"),
          "empty Effect.runSync"
        )
      ]
}

const engineV2 = (r: Results): ReadonlyArray<Verdict> => {
  const instant = r.inProcess.cases.find((c) => c.name === "instant adapter")
  const c64 = httpLevel(r, 64)
  const c1 = httpLevel(r, 1)
  const resolve1000 = r.routing.points.find((p) => p.targets === 1_000)
  const scored1000 = r.routing.scored.find((p) => p.targets === 1_000)
  const notMeasured = "not measured"
  return [
    check(
      "inprocess.p50.addedUs",
      "in-process added p50 per call, gateway vs direct adapter (instant adapter, sequential)",
      instant?.sequential.diffP50 ?? Number.NaN,
      atMost(15, "µs"),
      instant === undefined
        ? notMeasured
        : `the adapter called directly: ${fmt(instant.sequential.baseline.p50)} µs p50`
    ),
    check(
      "inprocess.throughput.1000",
      `gateway throughput, ${r.inProcess.concurrency.toLocaleString("en-US")} concurrent fibers (instant adapter)`,
      r.inProcess.concurrency === 1_000 ? (instant?.concurrent?.subject ?? Number.NaN) : Number.NaN,
      atLeast(20_000, "calls/s"),
      instant?.concurrent === undefined
        ? notMeasured
        : `the adapter called directly: ${fmt(instant.concurrent.baseline)} calls/s`
    ),
    // Issue 27: the HTTP path at the floor.
    cpuVsOpenAi("http.cpu.vsOpenAiSdk", c64, 64, 0.5),
    cpuVsOpenAi("http.cpu.vsOpenAiSdk.c1", c1, 1, 0.6),
    check(
      "http.throughput.vsOpenAiSdk",
      "HTTP calls/s, gateway / official openai client, concurrency 64",
      c64?.gateway.throughputVsOpenAi ?? Number.NaN,
      atLeast(1.8, "×"),
      c64 === undefined
        ? notMeasured
        : `openai client ${fmt(c64.openai.throughput.median)} calls/s, gateway ${fmt(c64.gateway.throughput.median)} calls/s`
    ),
    check(
      "http.cpu.addedOverAdapterUs",
      "HTTP CPU per call added by the gateway over its adapter alone, concurrency 64",
      c64?.addedOverAdapterCpuUs ?? Number.NaN,
      atMost(80, "µs"),
      c64 === undefined ? notMeasured : `the adapter alone: ${fmt(c64.adapter.cpuUsPerCall.median)} µs/call`
    ),
    check(
      "memory.inFlight.addedBytes",
      `heap per in-flight call added by the gateway (${r.memory.count.toLocaleString("en-US")} in flight)`,
      r.memory.inFlight.added,
      atMost(8_192, "bytes"),
      `a direct adapter call in flight: ${fmt(r.memory.inFlight.direct)} bytes; over an adapter owning its deadline (the HTTP adapters): ${fmt(r.memory.inFlightOwned.added)} added`
    ),
    check(
      "routing.resolve.1000.us",
      "resolve at 1,000 targets (all eligible), per decision",
      resolve1000?.decisionUs ?? Number.NaN,
      atMost(50, "µs"),
      "empty Effect.runSync"
    ),
    // Issue 14: the same budget with scoring on (every eligible target scored, the route sorted).
    check(
      "routing.resolve.scored.1000.us",
      "resolve at 1,000 targets (all eligible), scored selection, per decision",
      scored1000?.decisionUs ?? Number.NaN,
      atMost(50, "µs"),
      "empty Effect.runSync"
    )
  ]
}

/** The Redis targets (issue 15): `NaN` (a MISS) when the section did not run. */
/** The response cache's verdicts (also printed alone by `--only-cache`). */
export const cacheVerdicts = (r: Pick<Results, "cache">): ReadonlyArray<Verdict> => {
  const c = r.cache
  if (c === undefined) return []
  const redis = "roundTripsPerHit" in c.redis ? c.redis : undefined
  return [
    check(
      "cache.hit.p50Us",
      "response cache hit, p50 per call, memory store (classification workflow with an output schema, sequential)",
      c.hit.subject.p50,
      atMost(10, "µs"),
      `an empty Effect.runPromise: ${fmt(c.hit.baseline.p50)} µs p50`
    ),
    check(
      "cache.redis.roundTripsPerHit",
      "Redis round trips per cache hit (writes of the connection carrying a command of the hit, per hit; sequential hits, exact count)",
      redis?.roundTripsPerHit ?? Number.NaN,
      atMost(1, ""),
      redis === undefined
        ? "skipped" in c.redis
          ? c.redis.skipped
          : "not measured"
        : `${fmt(redis.commandsPerHit)} commands per hit over ${redis.hits} hits; ${redis.backgroundCommands} background commands meanwhile`
    )
  ]
}

export const redisVerdicts = (r: Pick<Results, "redis">): ReadonlyArray<Verdict> => {
  const x = r.redis !== undefined && "throughput" in r.redis ? r.redis : undefined
  const notMeasured = r.redis !== undefined && "skipped" in r.redis ? r.redis.skipped : "not measured"
  return [
    check(
      "redis.throughput.vsMemory",
      `calls/s with the Redis stores / with the memory stores, ${x?.concurrency ?? 256} concurrent calls, provider answering after ${x?.throughput.providerLatencyMs ?? 5} ms, local redis-server`,
      x?.throughput.ratio ?? Number.NaN,
      atLeast(0.7, "×"),
      x === undefined
        ? notMeasured
        : `memory ${fmt(x.throughput.memory)} calls/s, Redis ${fmt(x.throughput.redis)} calls/s; CPU µs per call: this process ${fmt(x.throughput.memoryCpuUs)} (memory) / ${fmt(x.throughput.redisCpuUs)} (Redis), redis-server ${fmt(x.throughput.serverCpuUs)}; provider answering at once: ${fmt(x.instant.ratio)}× (${fmt(x.instant.redis)} / ${fmt(x.instant.memory)})`
    ),
    check(
      "redis.roundTripsPerCall",
      "Redis round trips per call on the happy path (client connection writes per call, sequential calls)",
      x?.roundTripsPerCall ?? Number.NaN,
      atMost(2, ""),
      x === undefined
        ? notMeasured
        : `${fmt(x.commandsPerCall)} scripts per call; server read events per call ${fmt(x.serverReadsPerCall)}`
    )
  ]
}

export const verdicts = (r: Results): ReadonlyArray<Verdict> => {
  const out: Array<Verdict> = [...engineV2(r), ...redisVerdicts(r), ...cacheVerdicts(r)]
  for (const c of r.inProcess.cases) {
    if (c.name.includes("schema")) continue
    out.push(
      check(
        `overhead.sequential.${c.name}`,
        `in-process overhead per call, median, sequential (${c.name})`,
        c.sequential.diffP50,
        atMost(20, "µs"),
        "same adapter called directly"
      )
    )
    if (c.concurrent !== undefined) {
      out.push(
        check(
          `throughput.${r.inProcess.concurrency}.${c.name}`,
          `gateway throughput, ${r.inProcess.concurrency} concurrent fibers (${c.name})`,
          c.concurrent.subject,
          atLeast(40_000, "calls/s"),
          `direct adapter: ${fmt(c.concurrent.baseline)} calls/s (ratio ${fmt(c.concurrent.ratio, 3)})`
        )
      )
    }
  }
  if ("levels" in r.http) {
    for (const l of r.http.levels) {
      out.push(
        check(
          `http.cpu.c${l.concurrency}`,
          `HTTP path added CPU per call, concurrency ${l.concurrency}`,
          l.addedCpuUs,
          atMost(50, "µs"),
          "raw HttpClient POST"
        )
      )
      if (l.concurrency === 64) {
        out.push(
          check(
            `http.p50.c64`,
            "HTTP path added p50 latency, concurrency 64",
            l.addedP50Ms,
            atMost(0.3, "ms"),
            "raw HttpClient POST"
          )
        )
      }
      out.push(
        check(
          `http.throughput.c${l.concurrency}`,
          `HTTP path throughput vs raw, concurrency ${l.concurrency}`,
          l.throughputRatio,
          atLeast(0.9, "×"),
          "raw HttpClient POST"
        )
      )
    }
  }
  out.push(
    ...lastResolve("resolve.1000", r.routing.points, ""),
    ...lastResolve("resolve.scored.1000", r.routing.scored, ", scored selection")
  )
  for (const g of r.routing.growth) {
    out.push(
      check(
        `resolve.growth.${g.from}-${g.to}`,
        `resolve growth ${g.from} → ${g.to} targets`,
        g.ratio,
        atMost(12, "×"),
        `resolve at ${g.from} targets`
      )
    )
  }
  out.push(
    check(
      "memory.inflight",
      `heap per in-flight call (${r.memory.count.toLocaleString("en-US")} in flight), added by the gateway`,
      r.memory.inFlight.added / 1024,
      atMost(4, "KB"),
      `a direct adapter call in flight: ${fmt(r.memory.inFlight.direct / 1024)} KB`
    )
  )
  out.push(
    check(
      "memory.tenant",
      `heap per idle tenant (${r.memory.count.toLocaleString("en-US")} tenants, one call each)`,
      r.memory.tenants.perTenant / 1024,
      atMost(1, "KB"),
      "the same calls by one tenant"
    )
  )
  for (const p of r.tokens.points) {
    out.push(
      check(
        `tokens.${p.kb}kb`,
        `token estimation (estimateInput) per KB, ${p.kb} KB input`,
        p.estimateInputUsPerKb,
        atMost(50, "µs/KB"),
        "per KB of input"
      )
    )
  }
  return out
}

const row = (cells: ReadonlyArray<string>) => `| ${cells.join(" | ")} |`

/** The markdown report: verdicts first, then the figures behind them. */
export const markdown = (r: Results, v: ReadonlyArray<Verdict>): string => {
  const lines: Array<string> = []
  const passed = v.filter((x) => x.pass).length
  lines.push(`## modelgate benchmark (${r.profile})`, "")
  lines.push(
    `${r.startedAt}, ${r.durationSeconds.toFixed(0)} s, Node ${r.machine.node}, ${r.machine.cpus} × ${r.machine.cpuModel}, ` +
      `load average ${r.machine.loadAverage.map((x) => x.toFixed(1)).join(" / ")} (shared machine: absolute times are context only).`,
    ""
  )
  lines.push(`### Targets: ${passed} PASS, ${v.length - passed} MISS`, "")
  lines.push(row(["", "figure", "measured", "target", "baseline"]), row(["---", "---", "---:", "---:", "---"]))
  for (const x of v) {
    lines.push(
      row([
        x.pass ? "PASS" : "**MISS**",
        x.what,
        `${fmt(x.measured)} ${x.unit}`,
        `${x.comparison} ${fmt(x.target)} ${x.unit}`,
        x.baseline
      ])
    )
  }
  lines.push("", "### 1. In-process overhead (adapter answers at once vs the same adapter called directly)", "")
  lines.push(
    row([
      "case",
      "direct p50 / p99 µs",
      "gateway p50 / p99 µs",
      "added p50 µs",
      "added p99 µs",
      "direct calls/s (1,000 fibers)",
      "gateway calls/s",
      "ratio"
    ]),
    row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"])
  )
  for (const c of r.inProcess.cases) {
    const s = c.sequential
    lines.push(
      row([
        c.name,
        `${fmt(s.baseline.p50)} / ${fmt(s.baseline.p99)}`,
        `${fmt(s.subject.p50)} / ${fmt(s.subject.p99)}`,
        fmt(s.diffP50),
        fmt(s.diffP99),
        c.concurrent ? fmt(c.concurrent.baseline) : "–",
        c.concurrent ? fmt(c.concurrent.subject) : "–",
        c.concurrent ? fmt(c.concurrent.ratio, 3) : "–"
      ])
    )
  }
  lines.push(...httpSection(r.http))
  lines.push("", "### 3. Routing scale (`router.resolve`, all targets eligible)", "")
  lines.push(
    row(["targets", "µs per decision (p50)", "p99 µs", "growth vs 10× fewer"]),
    row(["---:", "---:", "---:", "---:"])
  )
  r.routing.points.forEach((p, i) => {
    const g = i === 0 ? undefined : r.routing.growth[i - 1]
    lines.push(row([p.targets.toLocaleString("en-US"), fmt(p.decisionUs), fmt(p.p99Us), g ? `${fmt(g.ratio)}×` : "–"]))
  })
  lines.push("", 'Scored selection (`selection: "scored"`, every eligible target scored):', "")
  lines.push(row(["targets", "µs per decision (p50)", "p99 µs"]), row(["---:", "---:", "---:"]))
  for (const p of r.routing.scored) {
    lines.push(row([p.targets.toLocaleString("en-US"), fmt(p.decisionUs), fmt(p.p99Us)]))
  }
  lines.push("", `### 4. Memory (after GC${r.memory.gcAvailable ? "" : " — gc NOT available, figures unreliable"})`, "")
  lines.push(row(["figure", "gateway", "baseline", "added"]), row(["---", "---:", "---:", "---:"]))
  lines.push(
    row([
      `bytes per in-flight call (${r.memory.count.toLocaleString("en-US")} in flight)`,
      fmt(r.memory.inFlight.gateway),
      `${fmt(r.memory.inFlight.direct)} (direct adapter call)`,
      fmt(r.memory.inFlight.added)
    ]),
    row([
      "the same, adapter owning its deadline (`generateUntil`, as the HTTP adapters)",
      fmt(r.memory.inFlightOwned.gateway),
      `${fmt(r.memory.inFlightOwned.direct)} (direct adapter call)`,
      fmt(r.memory.inFlightOwned.added)
    ]),
    row([
      `bytes per tenant after one call (${r.memory.count.toLocaleString("en-US")} tenants)`,
      fmt(r.memory.tenants.manyTenants),
      `${fmt(r.memory.tenants.oneTenant)} (same calls, one tenant)`,
      fmt(r.memory.tenants.perTenant)
    ])
  )
  lines.push("", `### 5. Token estimation (${r.tokens.tokenizer})`, "")
  lines.push(
    row([
      "input",
      "countText p50 µs",
      "estimateInput p50 / p99 µs",
      "countText µs/KB",
      "estimateInput µs/KB",
      "tokens/KB"
    ]),
    row(["---:", "---:", "---:", "---:", "---:", "---:"])
  )
  for (const p of r.tokens.points) {
    lines.push(
      row([
        `${p.kb} KB`,
        fmt(p.countText.p50),
        `${fmt(p.estimateInput.p50)} / ${fmt(p.estimateInput.p99)}`,
        fmt(p.countTextUsPerKb),
        fmt(p.estimateInputUsPerKb),
        fmt(p.tokensPerKb, 0)
      ])
    )
  }
  if (r.redis !== undefined) {
    lines.push("", "### 6. Shared state on Redis (local redis-server)", "")
    if ("skipped" in r.redis) lines.push(`Skipped: ${r.redis.skipped}.`)
    else {
      const x = r.redis
      lines.push(
        row([
          "provider latency",
          "memory stores calls/s",
          "Redis stores calls/s",
          "Redis / memory",
          "CPU µs/call, memory",
          "CPU µs/call, Redis",
          "redis-server CPU µs/call"
        ]),
        row(["---:", "---:", "---:", "---:", "---:", "---:", "---:"])
      )
      for (const t of [x.throughput, x.instant]) {
        lines.push(
          row([
            `${t.providerLatencyMs} ms`,
            fmt(t.memory),
            fmt(t.redis),
            fmt(t.ratio),
            fmt(t.memoryCpuUs),
            fmt(t.redisCpuUs),
            fmt(t.serverCpuUs)
          ])
        )
      }
      lines.push(
        "",
        `${x.concurrency} concurrent calls; round trips per call ${fmt(x.roundTripsPerCall)} (server read events ${fmt(x.serverReadsPerCall)}), scripts per call ${fmt(x.commandsPerCall)}.`
      )
    }
  }
  lines.push("", "Reproduce: `pnpm bench` (writes `examples/bench/results.json` and `examples/bench/results.md`).", "")
  return lines.join("\n")
}
