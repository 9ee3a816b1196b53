/**
 * `pnpm --filter @modelgate/examples multi-replica`: four gateway processes share one
 * `redis-server` (which this program starts on a free loopback port, without persistence; it needs
 * `redis-server` on the PATH — `.ci/system-packages` installs it).
 *
 * 1. Load: 4 × 500 concurrent calls on one tenant budget, providers with random latency and
 *    random failures that bill usage. A sampler reads the budget account and the tenant's permits
 *    in Redis every 2 ms; every reserve checks the account it answers with. At the end the
 *    account's committed spend must equal, exactly, what the calls' records say they spent.
 * 2. Breaker: process 1 calls a target that is down until its breaker opens; processes 2–4 must
 *    skip that target on their next call.
 * 3. Tool: the four processes run one side-effecting tool with the same key at once (`runOnce`);
 *    it must run once.
 * 4. Chaos: calls while Redis is SIGKILLed and restarted: every call ends by its deadline with an
 *    answer or a typed error, no provider is called without a reservation, and the gateways
 *    recover without being restarted.
 *
 * Prints a summary table and ends with the line
 * `multi-replica: processes=4 calls=N overspend=0 permitViolations=0 duplicateToolRuns=0`.
 */
import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Schema } from "effect"
import { Redis as IORedis } from "ioredis"
import * as Plan from "./plan.js"
import { type RedisServer, startRedis } from "@modelgate/testing/RedisServer"

export interface Summary {
  readonly processes: number
  readonly calls: number
  readonly overspend: number
  readonly permitViolations: number
  readonly duplicateToolRuns: number
  readonly rows: ReadonlyArray<readonly [string, string, string]>
  /** Every check of the proof, by name: `true` when it held. */
  readonly checks: Readonly<Record<string, boolean>>
  readonly line: string
}

const unitsPerCurrency = 1_000_000_000
const limitUnits = Math.floor(Plan.limit * unitsPerCurrency + 1e-6)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

interface Child {
  readonly process: ChildProcess
  readonly index: number
  readonly ask: <A, I>(
    phase: Plan.Phase,
    schema: Schema.Schema<A, I>
  ) => Promise<{ readonly result: A; readonly message: Plan.FromChild }>
}

const spawnChild = (index: number, url: string): Promise<Child> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL("./child.ts", import.meta.url)), [], {
      execArgv: ["--conditions=source", "--import", "tsx"],
      env: { ...process.env, MR_INDEX: String(index), MR_REDIS_URL: url },
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const waiting = new Map<string, (message: Plan.FromChild) => void>()
    child.on("message", (message: Plan.FromChild) => {
      const f = waiting.get(message.phase)
      waiting.delete(message.phase)
      f?.(message)
    })
    child.once("exit", (code) => {
      for (const f of waiting.values()) f({ phase: "ready", index, error: `exited with ${code}` })
    })
    const ask = <A, I>(phase: Plan.Phase, schema: Schema.Schema<A, I>) =>
      new Promise<{ readonly result: A; readonly message: Plan.FromChild }>((ok, fail) => {
        waiting.set(phase, (message) => {
          if (message.error !== undefined) return fail(new Error(`process ${index + 1}, ${phase}: ${message.error}`))
          const decoded = Schema.decodeUnknownEither(schema)(message.result)
          return decoded._tag === "Right"
            ? ok({ result: decoded.right, message })
            : fail(new Error(`process ${index + 1}, ${phase}: unexpected result`))
        })
        child.send({ phase } satisfies Plan.ToChild)
      })
    waiting.set("ready", (message) =>
      message.error !== undefined
        ? reject(new Error(`process ${index + 1} did not start: ${message.error}`))
        : resolve({ process: child, index, ask })
    )
  })

const Counts = Schema.Record({ key: Schema.String, value: Schema.Number })
const LoadResult = Schema.Struct({
  calls: Schema.Number,
  outcomes: Counts,
  committedUnits: Schema.Number,
  pending: Schema.Number
})
const ChaosResult = Schema.Struct({
  calls: Schema.Number,
  outcomes: Counts,
  late: Schema.Number,
  untyped: Schema.Number,
  maxMs: Schema.Number,
  pending: Schema.Number,
  providerCalls: Schema.Number
})
const Opened = Schema.Struct({ opened: Schema.Boolean, calls: Schema.Number })
const Seen = Schema.Struct({ skipped: Schema.Boolean, detail: Schema.String })
const ToolOutcome = Schema.Struct({ outcome: Schema.String })
const Recovered = Schema.Struct({ recovered: Schema.Boolean, afterMs: Schema.Number, attempts: Schema.Number })

const merge = (xs: ReadonlyArray<Record<string, number>>) => {
  const out: Record<string, number> = {}
  for (const x of xs) for (const [k, v] of Object.entries(x)) out[k] = (out[k] ?? 0) + v
  return Object.entries(out)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(", ")
}

/** Runs the proof; `log` gets progress lines. */
export const run = async (log: (line: string) => void = () => {}): Promise<Summary> => {
  const started = Date.now()
  let server: RedisServer = await startRedis()
  const admin = new IORedis(server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: false })
  admin.on("error", () => {})
  const children: Array<Child> = []
  try {
    log(`redis-server on port ${server.port}; starting ${Plan.processes} gateway processes`)
    children.push(...(await Promise.all(Array.from({ length: Plan.processes }, (_, i) => spawnChild(i, server.url)))))

    // 1. Load, sampled.
    const budgetKey = `${Plan.prefix}budget:{${Plan.tenant}/total}`
    const permitKey = `${Plan.prefix}permits:{tenants}`
    const sampled = { samples: 0, overLimit: 0, overPermits: 0, peakSpend: 0, peakPermits: 0 }
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        // (`c` and `r` in one read: the account as of one instant)
        const [budget, held] = await Promise.all([
          admin.hmget(budgetKey, "c", "r"),
          admin.hget(permitKey, `k:${Plan.tenant}`)
        ])
        const spend = Number(budget[0] ?? 0) + Number(budget[1] ?? 0)
        const permits = Number(held ?? 0)
        sampled.samples++
        sampled.peakSpend = Math.max(sampled.peakSpend, spend)
        sampled.peakPermits = Math.max(sampled.peakPermits, permits)
        if (spend > limitUnits) sampled.overLimit++
        if (permits > Plan.tenantMax) sampled.overPermits++
        await sleep(2)
      }
    })()
    log(`load: ${Plan.processes} × ${Plan.callsPerProcess} concurrent calls on one tenant budget`)
    const loadStarted = Date.now()
    const loads = await Promise.all(children.map((c) => c.ask("load", LoadResult)))
    const loadMs = Date.now() - loadStarted
    sampling = false
    await sampler
    const [committedRaw, reservedRaw] = await admin.hmget(budgetKey, "c", "r")
    const committed = Number(committedRaw ?? 0)
    const reserved = Number(reservedRaw ?? 0)
    const expected = loads.reduce((sum, l) => sum + l.result.committedUnits, 0)
    const reserveChecks = loads.reduce((sum, l) => sum + (l.message.checks?.reserves ?? 0), 0)
    const reserveOver = loads.reduce((sum, l) => sum + (l.message.checks?.overLimit ?? 0), 0)
    const loadCalls = loads.reduce((sum, l) => sum + l.result.calls, 0)
    const pendingLoad = loads.reduce((sum, l) => sum + l.result.pending, 0)
    const overspend = sampled.overLimit + reserveOver + (committed > limitUnits ? 1 : 0)
    const permitViolations = sampled.overPermits

    // 2. Breaker.
    log("breaker: process 1 opens the breaker of a target that is down; processes 2–4 call next")
    const [first, ...others] = children
    if (first === undefined) throw new Error("no gateway process started")
    const opened = await first.ask("openBreaker", Opened)
    const seen = await Promise.all(others.map((c) => c.ask("checkBreaker", Seen)))
    const skipped = seen.filter((s) => s.result.skipped).length

    // 3. Tool ledger.
    log("tool: one side-effecting tool, one key, four processes at once")
    const tools = await Promise.all(children.map((c) => c.ask("tool", ToolOutcome)))
    const toolRuns = Number((await admin.get(`${Plan.prefix}proof:tool-runs`)) ?? 0)
    const duplicateToolRuns = Math.max(0, toolRuns - 1)

    // 4. Chaos: Redis is SIGKILLed during calls, then restarted on its port.
    log("chaos: calls while redis-server is killed (SIGKILL) and restarted")
    const port = server.port
    const chaosRun = Promise.all(children.map((c) => c.ask("chaos", ChaosResult)))
    await sleep(300)
    server.kill()
    const killedAt = Date.now()
    await sleep(900)
    server = await startRedis(port)
    const restartedAt = Date.now()
    const chaos = await chaosRun
    const recovered = await Promise.all(children.map((c) => c.ask("recover", Recovered)))
    const withoutReservation = recovered.reduce((sum, r) => sum + (r.message.counters?.withoutReservation ?? 0), 0)
    const providerCalls = recovered.reduce((sum, r) => sum + (r.message.counters?.providerCalls ?? 0), 0)
    const chaosCalls = chaos.reduce((sum, c) => sum + c.result.calls, 0)
    const late = chaos.reduce((sum, c) => sum + c.result.late, 0)
    const untyped = chaos.reduce((sum, c) => sum + c.result.untyped, 0)
    const maxMs = Math.max(...chaos.map((c) => c.result.maxMs))

    const calls = loadCalls + chaosCalls
    const checks: Record<string, boolean> = {
      "committed + reserved ≤ limit (sampled, after every reserve)": overspend === 0,
      "final committed = Σ actual cost of the calls": committed === expected && reserved === 0,
      "tenant permits ≤ max across processes (sampled)": permitViolations === 0,
      "breaker opened in process 1 skipped by processes 2–4": opened.result.opened && skipped === Plan.processes - 1,
      "side-effecting tool ran once": toolRuns === 1,
      "chaos: every call ended by its deadline with a typed outcome": late === 0 && untyped === 0,
      "no provider call without a reservation": withoutReservation === 0,
      "every gateway recovered without a restart": recovered.every((r) => r.result.recovered)
    }
    const rows: Array<readonly [string, string, string]> = [
      ["load", "calls (4 processes × 500 at once)", `${loadCalls} in ${loadMs} ms`],
      ["load", "outcomes", merge(loads.map((l) => l.result.outcomes))],
      ["load", "budget limit / peak committed+reserved (sampled)", `${limitUnits} / ${sampled.peakSpend} units`],
      ["load", "samples / reserve checks / over the limit", `${sampled.samples} / ${reserveChecks} / ${overspend}`],
      ["load", "committed in Redis / Σ actual cost of the calls", `${committed} / ${expected} units`],
      ["load", "settlements pending", String(pendingLoad)],
      ["load", "tenant permits max / peak held (sampled)", `${Plan.tenantMax} / ${sampled.peakPermits}`],
      ["breaker", "calls to open it in process 1", `${opened.result.calls} (opened: ${opened.result.opened})`],
      ["breaker", "processes 2–4 that skipped it next call", `${skipped} of ${Plan.processes - 1}`],
      ["tool", "runs of the tool / outcomes", `${toolRuns} / ${tools.map((t) => t.result.outcome).join(", ")}`],
      ["chaos", "calls / outcomes", `${chaosCalls} / ${merge(chaos.map((c) => c.result.outcomes))}`],
      [
        "chaos",
        "Redis down (SIGKILL → restart)",
        `${restartedAt - killedAt} ms; slowest call ${maxMs} ms (deadline ${Plan.chaosDeadlineMs} ms)`
      ],
      ["chaos", "calls past their deadline / untyped failures", `${late} / ${untyped}`],
      [
        "chaos",
        "answered calls whose commit is pending (retried)",
        String(chaos.reduce((sum, c) => sum + c.result.pending, 0))
      ],
      ["chaos", "provider calls / without a reservation (whole run)", `${providerCalls} / ${withoutReservation}`],
      [
        "recovery",
        "first success after the restart, per process",
        recovered.map((r) => (r.result.recovered ? `${r.result.afterMs} ms` : "never")).join(", ")
      ],
      ["", "total time", `${((Date.now() - started) / 1000).toFixed(1)} s`]
    ]
    for (const [name, held] of Object.entries(checks)) rows.push(["check", name, held ? "ok" : "FAILED"])
    const line = `multi-replica: processes=${Plan.processes} calls=${calls} overspend=${overspend} permitViolations=${permitViolations} duplicateToolRuns=${duplicateToolRuns}`
    return {
      processes: Plan.processes,
      calls,
      overspend,
      permitViolations,
      duplicateToolRuns,
      rows,
      checks,
      line
    }
  } finally {
    for (const c of children) {
      if (c.process.connected) c.process.send({ phase: "exit" } satisfies Plan.ToChild)
    }
    await Promise.all(
      children.map((c) =>
        c.process.exitCode !== null ? Promise.resolve() : new Promise((resolve) => c.process.once("exit", resolve))
      )
    )
    admin.disconnect()
    await server.stop()
  }
}

/** The summary as a markdown table, then the final line. */
export const render = (summary: Summary): string => {
  const width = (i: 0 | 1 | 2) => Math.max(...summary.rows.map((r) => r[i].length))
  const pad = (s: string, n: number) => s + " ".repeat(Math.max(0, n - s.length))
  const w = [width(0), width(1), width(2)] as const
  const lines = [
    `| ${pad("phase", w[0])} | ${pad("what", w[1])} | ${pad("measured", w[2])} |`,
    `| ${"-".repeat(w[0])} | ${"-".repeat(w[1])} | ${"-".repeat(w[2])} |`,
    ...summary.rows.map((r) => `| ${pad(r[0], w[0])} | ${pad(r[1], w[1])} | ${pad(r[2], w[2])} |`)
  ]
  return `${lines.join("\n")}\n${summary.line}`
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const summary = await run((line) => process.stderr.write(`${line}\n`))
  process.stdout.write(`${render(summary)}\n`)
  process.exit(Object.values(summary.checks).every((held) => held) ? 0 : 1)
}
