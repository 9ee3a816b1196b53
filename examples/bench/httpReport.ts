/**
 * The markdown of the HTTP section (§2): every client's row at each concurrency, the ratios to the
 * official `openai` client, what a second target costs, and the gateway against the raw POST.
 */
import { clients, type Client, type HttpResults } from "./http.js"
import { fmt } from "./harness.js"

const row = (cells: ReadonlyArray<string>) => `| ${cells.join(" | ")} |`

const range = (x: { readonly median: number; readonly min: number; readonly max: number }) =>
  `${fmt(x.median)} (${fmt(x.min)}–${fmt(x.max)})`

/** The label of each client in the table. */
const labels = (openaiClient: string): Record<Client, string> => ({
  gateway: "modelgate `gateway.generate` (OpenAI adapter), one target",
  fallback: "modelgate gateway, primary + fallback (the primary answers)",
  failover: "modelgate gateway, primary 503 once → the fallback serves (2 HTTP exchanges per call)",
  adapter: "OpenAI adapter alone",
  raw: "raw `@effect/platform` HttpClient POST",
  undici: "raw `undici.request` + JSON (the floor)",
  openai: `official \`${openaiClient}\` client`,
  effectAi: "`@effect/ai` `generateText` + `ExecutionPlan` (2 models) + `Effect.timeout`"
})

/** The lines of the HTTP section (its heading included). */
export const httpSection = (http: HttpResults | { readonly skipped: string }): ReadonlyArray<string> => {
  const lines: Array<string> = [
    "",
    `### 2. HTTP path (${clients.length} clients, the same mock server in a child process)`,
    ""
  ]
  if (!("levels" in http)) {
    lines.push(`skipped: ${http.skipped}`)
    return lines
  }
  const names = labels(http.openaiClient)
  const rounds = http.levels[0]?.order.length ?? 0
  lines.push(
    `Client CPU (this process, \`process.cpuUsage\`) and calls/s: ${rounds} round(s) per concurrency, every client once ` +
      "per round in rotated order, same calls per client per round " +
      `(${http.levels.map((l) => `c=${l.concurrency}: ${l.callsPerRound.toLocaleString("en-US")}`).join(", ")}); ` +
      "medians (min–max) over rounds; ratios vs the openai client are medians of per-round ratios.",
    ""
  )
  lines.push(
    row([
      "concurrency",
      "client",
      "p50 / p99 ms",
      "calls/s",
      "CPU µs/call",
      "CPU vs openai client",
      "calls/s vs openai client"
    ]),
    row(["---:", "---", "---:", "---:", "---:", "---:", "---:"])
  )
  for (const l of http.levels) {
    for (const c of clients) {
      const side = l[c]
      lines.push(
        row([
          String(l.concurrency),
          names[c],
          `${fmt(side.latencyMs.p50, 3)} / ${fmt(side.latencyMs.p99, 3)}`,
          range(side.throughput),
          range(side.cpuUsPerCall),
          `${fmt(side.cpuVsOpenAi, 3)}×`,
          `${fmt(side.throughputVsOpenAi, 3)}×`
        ])
      )
    }
  }
  lines.push("")
  for (const l of http.levels) {
    lines.push(
      `- c=${l.concurrency}: gateway / openai client: CPU per call ${fmt(l.gateway.cpuVsOpenAi, 3)}×, ` +
        `calls/s ${fmt(l.gateway.throughputVsOpenAi, 3)}×; over the adapter alone the gateway adds ` +
        `${fmt(l.addedOverAdapterCpuUs)} µs of CPU per call; a second target (primary answers) adds ` +
        `${fmt(l.secondTargetAddedCpuUs)} µs of CPU per call over one target; \`@effect/ai\` / openai client: ` +
        `CPU ${fmt(l.effectAi.cpuVsOpenAi, 3)}×, calls/s ${fmt(l.effectAi.throughputVsOpenAi, 3)}×.`
    )
  }
  lines.push("", "Gateway (one target) vs the raw POST (medians of per-round differences):", "")
  lines.push(
    row(["concurrency", "added p50 ms", "added p99 ms", "added CPU µs/call", "calls/s ratio"]),
    row(["---:", "---:", "---:", "---:", "---:"])
  )
  for (const l of http.levels) {
    lines.push(
      row([
        String(l.concurrency),
        fmt(l.addedP50Ms, 3),
        fmt(l.addedP99Ms, 3),
        fmt(l.addedCpuUs),
        fmt(l.throughputRatio, 3)
      ])
    )
  }
  return lines
}
