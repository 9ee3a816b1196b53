/**
 * Async boundaries per call: what a call costs around its I/O besides its own steps. Pairs of
 * subjects, each an adapter alone and the gateway (one target) over it:
 *
 * - `http`: the OpenAI adapter over the adapters' default transport against the bench's loopback
 *   mock, called with the very provider request the gateway builds (`http.ts`'s `adapter` and
 *   `gateway` subjects);
 * - `instant`: the instant adapter (`Effect.succeed`), in process;
 * - `echo`: an adapter giving the HTTP adapter's answer at once (the gateway's own steps over a
 *   real response, no I/O);
 * - `until`: not the gateway but the HTTP adapter bounding its own deadline (`generateUntil`, as the
 *   gateway calls it) against its `generate`;
 * - `spin`: not the gateway but the HTTP adapter after `ASYNC_COST_SPIN_US` µs (default 40) of
 *   synchronous work: what that much CPU between the calls' I/O costs.
 *
 * Counted per call, at c=1 and c=64:
 *
 * - `tasks`: Effect scheduler tasks (`scheduleTask` on Effect's default scheduler: a fiber's
 *   resumption after an `Effect.async` wait, a fork's start, a yield);
 * - `yields`: the scheduler's `shouldYield` answering yes (a fiber past its op budget);
 * - `fibers`: fibers created (Effect's fiber ids issued);
 * - `setTimeout`, `clearTimeout`, `setImmediate`, `dateNow` (the globals, wrapped in this process
 *   only; `Date.now` is every read of Effect's live clock);
 * - `promises`, `ticks`, `timeouts`, `immediates`, `other`: `async_hooks` resources created
 *   (`PROMISE`, `TickObject`, `Timeout`, `Immediate`, the rest), in a pass of their own (the hook
 *   slows the calls down; the counts do not depend on it).
 *
 * The driver (`Effect.forEach` with the concurrency, as `http.ts` runs the Effect clients) is the
 * same for every subject, so differences within a pair are the subject's own.
 *
 * Bundle it (from `examples/`, next to `mockServer.ts`, which it starts), as `run.mjs` does:
 *
 *     npx esbuild bench/asyncCost.ts --bundle --platform=node --format=esm --conditions=source \
 *       --outfile=bench/asyncCost.bundle.mjs \
 *       --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
 *
 * - `node --expose-gc bench/asyncCost.bundle.mjs [calls]`: the counts (default 2,000 calls);
 * - `node --expose-gc bench/asyncCost.bundle.mjs cpu [rounds] [calls] [pairs]`: CPU µs per call
 *   (user + system, and system alone) of each pair's two sides in alternating rounds, and the
 *   median of the per-round differences (`http,instant,echo` by default; over HTTP it is what
 *   `http.cpu.addedOverAdapterUs` measures, without the other six clients; the in-process pairs
 *   make 5 × `calls` calls a round);
 * - `node --expose-gc bench/asyncCost.bundle.mjs profile <pair> <adapter|gateway> [c] [calls] [out]`:
 *   the CPU profile of one side's calls (inspector `Profiler`);
 * - `node --expose-gc bench/asyncCost.bundle.mjs alloc <pair> [c] [calls] [top]`: bytes **allocated**
 *   per call by each side (V8's sampling heap profiler, every 128 bytes, objects collected by
 *   scavenges and full GCs included), scavenges per 1,000 calls, and the gateway's allocating
 *   functions with the most bytes over the adapter's (bundle lines: the profiler does not apply
 *   source maps).
 */
import * as OpenAi from "@modelgate/adapters/openai"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import { NodeHttpClient } from "@effect/platform-node"
import type * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Effect, Layer, ManagedRuntime, Redacted, Scheduler } from "effect"
import { createHook } from "node:async_hooks"
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { constants, PerformanceObserver } from "node:perf_hooks"
import { answerText, buildGateway, command, instantAdapter, requestFor, target, workflow } from "./fixtures.js"
import { collectGarbage, median } from "./harness.js"
import { startMock } from "./mockProcess.js"

/** What one pass counts, over all its calls. */
interface Counts {
  tasks: number
  yields: number
  fibers: number
  setTimeout: number
  clearTimeout: number
  setImmediate: number
  dateNow: number
  promises: number
  ticks: number
  timeouts: number
  immediates: number
  other: number
}

const zero = (): Counts => ({
  tasks: 0,
  yields: 0,
  fibers: 0,
  setTimeout: 0,
  clearTimeout: 0,
  setImmediate: 0,
  dateNow: 0,
  promises: 0,
  ticks: 0,
  timeouts: 0,
  immediates: 0,
  other: 0
})

/** The counters the wrapped scheduler and globals add to (the current pass's, when one is counting). */
const probe: { counts: Counts | undefined } = { counts: undefined }

/** Wraps Effect's default scheduler and the timer globals of this process so that they count. */
const instrument = () => {
  const scheduler = Scheduler.defaultScheduler
  const scheduleTask = scheduler.scheduleTask.bind(scheduler)
  const shouldYield = scheduler.shouldYield.bind(scheduler)
  scheduler.scheduleTask = (task, priority, fiber) => {
    if (probe.counts !== undefined) probe.counts.tasks++
    scheduleTask(task, priority, fiber)
  }
  scheduler.shouldYield = (fiber) => {
    const answer = shouldYield(fiber)
    if (answer !== false && probe.counts !== undefined) probe.counts.yields++
    return answer
  }
  const now = Date.now
  Date.now = () => {
    if (probe.counts !== undefined) probe.counts.dateNow++
    return now()
  }
  const { setTimeout: st, clearTimeout: ct, setImmediate: si } = globalThis
  globalThis.setTimeout = Object.assign((...args: Parameters<typeof st>) => {
    if (probe.counts !== undefined) probe.counts.setTimeout++
    return st(...args)
  }, st)
  globalThis.clearTimeout = (...args: Parameters<typeof ct>) => {
    if (probe.counts !== undefined) probe.counts.clearTimeout++
    return ct(...args)
  }
  globalThis.setImmediate = Object.assign((...args: Parameters<typeof si>) => {
    if (probe.counts !== undefined) probe.counts.setImmediate++
    return si(...args)
  }, si)
}

/** `async_hooks` resources created while a pass counts (enabled for the hooked passes only). */
const hook = createHook({
  init: (_id, type) => {
    const counts = probe.counts
    if (counts === undefined) return
    if (type === "PROMISE") counts.promises++
    else if (type === "TickObject") counts.ticks++
    else if (type === "Timeout") counts.timeouts++
    else if (type === "Immediate") counts.immediates++
    else counts.other++
  }
})

/** The next fiber id Effect will issue. */
const nextFiberId = (): number =>
  Effect.runSync(Effect.withFiberRuntime<number>((fiber) => Effect.succeed(fiber.id().id)))

/** A subject: makes `calls` calls with `concurrency` in flight. */
type Run = (calls: number, concurrency: number) => Promise<void>

const driver =
  (call: Effect.Effect<unknown, unknown>): Run =>
  (calls, concurrency) =>
    Effect.runPromise(
      Effect.forEach(
        Array.from({ length: calls }, (_, i) => i),
        () => call,
        { concurrency, discard: true }
      )
    )

/** One counted pass of `run`; with `hooked`, the `async_hooks` resources too. */
const count = async (run: Run, calls: number, concurrency: number, hooked: boolean): Promise<Counts> => {
  collectGarbage(1)
  const counts = zero()
  if (hooked) hook.enable()
  const first = nextFiberId()
  probe.counts = counts
  await run(calls, concurrency)
  probe.counts = undefined
  counts.fibers = nextFiberId() - first - 1
  if (hooked) hook.disable()
  return counts
}

/** CPU µs per call of one pass: user + system, and system alone. */
interface CpuPerCall {
  readonly total: number
  readonly system: number
}

const cpuUsPerCall = async (run: Run, calls: number, concurrency: number): Promise<CpuPerCall> => {
  collectGarbage(1)
  const start = process.cpuUsage()
  await run(calls, concurrency)
  const used = process.cpuUsage(start)
  return { total: (used.user + used.system) / calls, system: used.system / calls }
}

/** Busy for `us` µs of wall time. */
const spin = (us: number) => {
  const end = performance.now() + us / 1000
  while (performance.now() < end) {
    // spin
  }
}

/** One pair: the adapter alone and what runs over (or around) it. */
interface Pair {
  readonly adapter: Run
  readonly gateway: Run
}

/** An in-process pair: `adapter` alone (provider `name`) and a gateway of one target over it. */
const inProcessPair = async (name: string, adapter: Omit<ProviderAdapter.ProviderAdapter, "provider">) => {
  const t = target(`model://bench/${name}@eu`, name)
  const stack = await buildGateway({
    targets: [t],
    workflows: [workflow(`bench.${name}`, [t.ref])],
    adapters: { [name]: adapter }
  })
  const cmd = command(`bench.${name}`)
  const request = requestFor(cmd, t)
  const pair: Pair = {
    adapter: driver(Effect.suspend(() => adapter.generate(request))),
    gateway: driver(Effect.suspend(() => stack.gateway.generate(cmd)))
  }
  return { pair, dispose: stack.dispose }
}

/** The pairs over one mock server; `dispose` closes what they built. */
const subjects = async (baseUrl: string) => {
  const runtime = ManagedRuntime.make(Layer.merge(HttpTransport.layerUndici(), NodeHttpClient.layerUndici))
  const adapter = await runtime.runPromise(OpenAi.make({ baseUrl, apiKey: Redacted.make("sk-bench-not-a-secret") }))
  const generateUntil = adapter.generateUntil
  if (generateUntil === undefined) throw new Error("asyncCost: the adapter does not own its deadline")
  const t = target("model://openai/bench@eu", "openai")
  const cmd = command("bench.http")
  // The adapter alone is given the very request the gateway builds (as in `http.ts`): one probe call.
  let probed: ProviderAdapter.ProviderRequest | undefined
  const probe = await buildGateway({
    targets: [t],
    workflows: [workflow("bench.http", [t.ref])],
    adapters: {
      openai: {
        ...adapter,
        generate: (request) => {
          probed ??= request
          return adapter.generate(request)
        },
        generateUntil: undefined
      }
    }
  })
  await Effect.runPromise(probe.gateway.generate(cmd)).finally(() => probe.dispose())
  if (probed === undefined) throw new Error("asyncCost: the probe call made no provider request")
  const request = probed
  const http = await buildGateway({
    targets: [t],
    workflows: [workflow("bench.http", [t.ref])],
    adapters: { openai: adapter }
  })
  const check = await Effect.runPromise(http.gateway.generate(cmd))
  if (check.content.text !== answerText) throw new Error(`asyncCost: got ${JSON.stringify(check.content.text)}`)
  const instant = await inProcessPair("instant", instantAdapter)
  const answer = await Effect.runPromise(adapter.generate(request))
  const echo = await inProcessPair("echo", { ...instantAdapter, generate: () => Effect.succeed(answer) })
  const spinUs = Number(process.env.ASYNC_COST_SPIN_US ?? 40)
  const direct = driver(Effect.suspend(() => adapter.generate(request)))
  const pairs: Record<string, Pair> = {
    http: { adapter: direct, gateway: driver(Effect.suspend(() => http.gateway.generate(cmd))) },
    instant: instant.pair,
    echo: echo.pair,
    until: {
      adapter: direct,
      gateway: driver(Effect.suspend(() => generateUntil(request, Date.now() + 30_000)))
    },
    spin: {
      adapter: direct,
      gateway: driver(
        Effect.suspend(() => {
          spin(spinUs)
          return adapter.generate(request)
        })
      )
    }
  }
  return {
    pairs,
    dispose: async () => {
      await echo.dispose()
      await instant.dispose()
      await http.dispose()
      await runtime.dispose()
    }
  }
}

const perCall = (counts: Counts, calls: number): Record<string, number> =>
  Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Math.round((v / calls) * 100) / 100]))

/** The counts per call of every pair's two sides, at c=1 and c=64. */
const table = async (pairs: Record<string, Pair>, calls: number) => {
  for (const concurrency of [1, 64]) {
    const rows: Array<Record<string, number | string>> = []
    for (const [name, pair] of Object.entries(pairs)) {
      for (const [side, run] of [
        ["adapter", pair.adapter],
        ["gateway", pair.gateway]
      ] as const) {
        await run(Math.min(calls, 500), concurrency)
        const plain = await count(run, calls, concurrency, false)
        const hooked = await count(run, calls, concurrency, true)
        const { promises, ticks, timeouts, immediates, other } = hooked
        rows.push({
          subject: `${name} ${side}`,
          ...perCall({ ...plain, promises, ticks, timeouts, immediates, other }, calls)
        })
      }
    }
    console.log(`c=${concurrency}, ${calls} calls, per call:`)
    console.table(rows)
  }
}

/** CPU of one round of a pair's two sides. */
interface PairRound {
  readonly adapter: CpuPerCall
  readonly gateway: CpuPerCall
}

/** Alternating rounds of a pair's two sides; prints medians (range) of CPU µs per call and of the differences. */
const cpuPair = async (label: string, pair: Pair, rounds: number, calls: number) => {
  for (const concurrency of [1, 64]) {
    await pair.adapter(calls, concurrency)
    await pair.gateway(calls, concurrency)
    const done: Array<PairRound> = []
    for (let round = 0; round < rounds; round++) {
      // Alternate which side goes first.
      if (round % 2 === 0) {
        const adapter = await cpuUsPerCall(pair.adapter, calls, concurrency)
        done.push({ adapter, gateway: await cpuUsPerCall(pair.gateway, calls, concurrency) })
      } else {
        const gateway = await cpuUsPerCall(pair.gateway, calls, concurrency)
        done.push({ gateway, adapter: await cpuUsPerCall(pair.adapter, calls, concurrency) })
      }
    }
    const f = (of: (r: PairRound) => number) => {
      const xs = done.map(of)
      return `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`
    }
    console.log(
      `${label} c=${concurrency}: adapter ${f((r) => r.adapter.total)} µs, gateway ${f((r) => r.gateway.total)} µs, ` +
        `gateway − adapter ${f((r) => r.gateway.total - r.adapter.total)} µs per call; system time of it: ` +
        `adapter ${f((r) => r.adapter.system)}, gateway ${f((r) => r.gateway.system)} µs ` +
        `(${rounds} rounds of ${calls} calls)`
    )
  }
}

/** Runs one inspector command with no result. */
const command0 = (session: Session, method: "Profiler.enable" | "Profiler.start"): Promise<void> =>
  new Promise((resolve, reject) => session.post(method, (error) => (error ? reject(error) : resolve())))

/** The CPU profile of `calls` calls of `run` (after a warm-up), written to `out`. */
const profile = async (run: Run, concurrency: number, calls: number, out: string) => {
  await run(Math.min(calls, 2_000), concurrency)
  const session = new Session()
  session.connect()
  await command0(session, "Profiler.enable")
  await command0(session, "Profiler.start")
  const us = (await cpuUsPerCall(run, calls, concurrency)).total
  const result = await new Promise<unknown>((resolve, reject) =>
    session.post("Profiler.stop", (error, stopped) => (error ? reject(error) : resolve(stopped.profile)))
  )
  writeFileSync(out, JSON.stringify(result))
  session.disconnect()
  console.log(`c=${concurrency}: ${us.toFixed(0)} CPU µs per call over ${calls} calls; profile in ${out}`)
}

/** A node of V8's sampling heap profile. */
interface SampleNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<SampleNode>
}

/** Sampled bytes by allocating function (`name file:line`), and their total. */
const bySite = (root: SampleNode): { readonly sites: Map<string, number>; readonly total: number } => {
  const sites = new Map<string, number>()
  let total = 0
  const visit = (node: SampleNode) => {
    const f = node.callFrame
    if (node.selfSize > 0) {
      const key = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop() ?? ""}:${f.lineNumber}`
      sites.set(key, (sites.get(key) ?? 0) + node.selfSize)
      total += node.selfSize
    }
    for (const child of node.children) visit(child)
  }
  visit(root)
  return { sites, total }
}

/** Scavenges (minor GCs) observed while `body` runs. */
const scavengesDuring = async (body: () => Promise<void>): Promise<number> => {
  let scavenges = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail: unknown = "detail" in entry ? entry.detail : undefined
      if (
        typeof detail === "object" &&
        detail !== null &&
        "kind" in detail &&
        detail.kind === constants.NODE_PERFORMANCE_GC_MINOR
      )
        scavenges++
    }
  })
  observer.observe({ entryTypes: ["gc"] })
  await body()
  // GC entries are delivered asynchronously.
  await new Promise((resolve) => setTimeout(resolve, 50))
  observer.disconnect()
  return scavenges
}

/** Allocation by one side's `calls` calls: sampled sites, bytes per call, scavenges per 1,000 calls. */
const allocation = async (session: Session, run: Run, concurrency: number, calls: number) => {
  await run(Math.min(calls, 2_000), concurrency)
  collectGarbage(1)
  await post(session, "HeapProfiler.startSampling", {
    samplingInterval: 128,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  })
  const scavenges = await scavengesDuring(() => run(calls, concurrency))
  const { profile } = await post<{ profile: { head: SampleNode } }>(session, "HeapProfiler.stopSampling")
  const { sites, total } = bySite(profile.head)
  return { sites, bytesPerCall: total / calls, scavengesPer1000: (scavenges / calls) * 1000 }
}

/** Posts `method` on an inspector session. */
const post = <A>(session: Session, method: string, params: object = {}): Promise<A> =>
  new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result as A)))
  )

/** Bytes allocated per call by both sides of a pair, and the gateway's sites with the most over the adapter's. */
const allocPair = async (pair: Pair, concurrency: number, calls: number, top: number) => {
  const session = new Session()
  session.connect()
  await post(session, "HeapProfiler.enable")
  const adapter = await allocation(session, pair.adapter, concurrency, calls)
  const gateway = await allocation(session, pair.gateway, concurrency, calls)
  session.disconnect()
  const round = (n: number) => Math.round(n)
  console.log(
    `c=${concurrency}, ${calls} calls: allocated per call adapter ${round(adapter.bytesPerCall)} B, ` +
      `gateway ${round(gateway.bytesPerCall)} B (+${round(gateway.bytesPerCall - adapter.bytesPerCall)}); ` +
      `scavenges per 1,000 calls ${adapter.scavengesPer1000.toFixed(2)} / ${gateway.scavengesPer1000.toFixed(2)}`
  )
  const extra = [...gateway.sites].map(
    ([site, bytes]) => [site, (bytes - (adapter.sites.get(site) ?? 0)) / calls] as const
  )
  for (const [site, bytes] of extra.sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${round(bytes).toString().padStart(7)} B  ${site}`)
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href
if (isMain) {
  const [mode, ...args] = process.argv.slice(2)
  const mock = await startMock()
  // The CPU and profile modes run the globals and the scheduler as they are.
  if (mode !== "cpu" && mode !== "profile" && mode !== "alloc") instrument()
  const built = await subjects(mock.baseUrl)
  try {
    if (mode === "profile") {
      const [name = "http", side = "gateway", concurrency = "64", calls = "10000", out = "asyncCost.cpuprofile"] = args
      const pair = built.pairs[name]
      if (pair === undefined) throw new Error(`asyncCost: no pair ${name}`)
      await profile(side === "adapter" ? pair.adapter : pair.gateway, Number(concurrency), Number(calls), out)
    } else if (mode === "alloc") {
      const [name = "http", concurrency = "64", calls = "10000", top = "40"] = args
      const pair = built.pairs[name]
      if (pair === undefined) throw new Error(`asyncCost: no pair ${name}`)
      await allocPair(pair, Number(concurrency), Number(calls), Number(top))
    } else if (mode === "cpu") {
      const [rounds, calls] = [Number(args[0] ?? 6), Number(args[1] ?? 2_000)]
      for (const name of (args[2] ?? "http,instant,echo").split(",")) {
        const pair = built.pairs[name]
        if (pair === undefined) throw new Error(`asyncCost: no pair ${name}`)
        // The in-process pairs are cheap: more calls per round.
        await cpuPair(name, pair, rounds, name === "instant" || name === "echo" ? calls * 5 : calls)
      }
    } else await table(built.pairs, Number(mode ?? 2_000))
  } finally {
    await built.dispose()
    await mock.stop()
  }
}
