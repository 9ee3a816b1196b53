/**
 * Async boundaries per call: what a call costs around its I/O besides its own steps. For the
 * OpenAI adapter alone and the gateway over it (one target), against the bench's loopback mock
 * (`http.ts`'s `adapter` and `gateway` subjects), and for the instant adapter alone and the gateway
 * over it (in process, no I/O), at c=1 and c=64, per call:
 *
 * - `tasks`: Effect scheduler tasks (`scheduleTask` on Effect's default scheduler: a fiber's
 *   resumption after an `Effect.async` wait, a fork's start, a yield);
 * - `yields`: the scheduler's `shouldYield` answering yes (a fiber past its op budget);
 * - `fibers`: fibers created (Effect's fiber ids issued);
 * - `setTimeout`, `clearTimeout`, `setImmediate` (the globals, wrapped in this process only);
 * - `promises`, `ticks`, `timeouts`, `immediates`, `other`: `async_hooks` resources created
 *   (`PROMISE`, `TickObject`, `Timeout`, `Immediate`, the rest), in a pass of their own (the hook
 *   slows the calls down; the counts do not depend on it).
 *
 * The driver (`Effect.forEach` with the concurrency, as `http.ts` runs the Effect clients) is the
 * same for every subject, so differences between subjects are the subjects' own.
 *
 * Bundle it (from `examples/`, next to `mockServer.ts`, which it starts), as `run.mjs` does:
 *
 *     npx esbuild bench/asyncCost.ts --bundle --platform=node --format=esm --conditions=source \
 *       --outfile=bench/asyncCost.bundle.mjs \
 *       --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
 *
 * - `node --expose-gc bench/asyncCost.bundle.mjs [calls]`: the counts table (default 2,000 calls);
 * - `node --expose-gc bench/asyncCost.bundle.mjs cpu [rounds] [calls]`: CPU µs per call of the adapter
 *   and the gateway in alternating rounds at c=1 and c=64, and the median of the per-round
 *   differences (over HTTP: what `http.cpu.addedOverAdapterUs` measures, without the other six
 *   clients; in process: 5 × `calls` calls).
 */
import * as OpenAi from "@modelgate/adapters/openai"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import { NodeHttpClient } from "@effect/platform-node"
import type * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Effect, Layer, ManagedRuntime, Redacted, Scheduler } from "effect"
import { createHook } from "node:async_hooks"
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
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
const nextFiberId = () => Effect.runSync(Effect.fiberId).id

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

const cpuUsPerCall = async (run: Run, calls: number, concurrency: number) => {
  collectGarbage(1)
  const start = process.cpuUsage()
  await run(calls, concurrency)
  const used = process.cpuUsage(start)
  return (used.user + used.system) / calls
}

/** The four subjects over one mock server; `dispose` closes what they built. */
const subjects = async (baseUrl: string) => {
  const runtime = ManagedRuntime.make(Layer.merge(HttpTransport.layerUndici(), NodeHttpClient.layerUndici))
  const adapter = await runtime.runPromise(OpenAi.make({ baseUrl, apiKey: Redacted.make("sk-bench-not-a-secret") }))
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
  const i = target("model://bench/instant@eu", "bench")
  const instant = await buildGateway({
    targets: [i],
    workflows: [workflow("bench.instant", [i.ref])],
    adapters: { bench: instantAdapter }
  })
  // The HTTP adapter's answer, given at once: the gateway's own steps over a real response.
  const answer = await Effect.runPromise(adapter.generate(request))
  const echoAdapter = { ...instantAdapter, generate: () => Effect.succeed(answer) }
  const e = target("model://bench/echo@eu", "echo")
  const echo = await buildGateway({
    targets: [e],
    workflows: [workflow("bench.echo", [e.ref])],
    adapters: { echo: echoAdapter }
  })
  const echoCmd = command("bench.echo")
  const echoRequest = requestFor(echoCmd, e)
  const instantCmd = command("bench.instant")
  const instantRequest = requestFor(instantCmd, i)
  const check = await Effect.runPromise(http.gateway.generate(cmd))
  if (check.content.text !== answerText) throw new Error(`asyncCost: got ${JSON.stringify(check.content.text)}`)
  const runs: Record<string, Run> = {
    "http adapter": driver(Effect.suspend(() => adapter.generate(request))),
    "http gateway": driver(Effect.suspend(() => http.gateway.generate(cmd))),
    "instant adapter": driver(Effect.suspend(() => instantAdapter.generate(instantRequest))),
    "instant gateway": driver(Effect.suspend(() => instant.gateway.generate(instantCmd))),
    // The adapter bounding its own deadline, as the gateway calls it (`generateUntil`), against `generate`.
    "until adapter": driver(Effect.suspend(() => adapter.generate(request))),
    "until gateway": driver(
      Effect.suspend(() =>
        adapter.generateUntil === undefined
          ? Effect.die("asyncCost: the adapter has no generateUntil")
          : adapter.generateUntil(request, Date.now() + 30_000)
      )
    ),
    "echo adapter": driver(Effect.suspend(() => echoAdapter.generate(echoRequest))),
    "echo gateway": driver(Effect.suspend(() => echo.gateway.generate(echoCmd)))
  }
  return {
    runs,
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

const table = async (runs: Record<string, Run>, calls: number) => {
  for (const concurrency of [1, 64]) {
    const rows: Array<Record<string, number | string>> = []
    for (const [name, run] of Object.entries(runs)) {
      await run(Math.min(calls, 500), concurrency)
      const plain = await count(run, calls, concurrency, false)
      const hooked = await count(run, calls, concurrency, true)
      const row = perCall(
        { ...plain, promises: hooked.promises, ticks: hooked.ticks, timeouts: hooked.timeouts, immediates: hooked.immediates, other: hooked.other },
        calls
      )
      rows.push({ subject: name, ...row })
    }
    console.log(`c=${concurrency}, ${calls} calls, per call:`)
    console.table(rows)
  }
}

/** Alternating rounds of `baseline` and `subject`; prints medians (range) of CPU µs per call and of the differences. */
const cpuPair = async (label: string, baseline: Run, subject: Run, rounds: number, calls: number) => {
  for (const concurrency of [1, 64]) {
    await baseline(calls, concurrency)
    await subject(calls, concurrency)
    const b: Array<number> = []
    const s: Array<number> = []
    for (let round = 0; round < rounds; round++) {
      if (round % 2 === 0) {
        b.push(await cpuUsPerCall(baseline, calls, concurrency))
        s.push(await cpuUsPerCall(subject, calls, concurrency))
      } else {
        s.push(await cpuUsPerCall(subject, calls, concurrency))
        b.push(await cpuUsPerCall(baseline, calls, concurrency))
      }
    }
    const f = (xs: ReadonlyArray<number>) =>
      `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`
    console.log(
      `${label} c=${concurrency}: adapter ${f(b)} µs, gateway ${f(s)} µs, gateway − adapter ` +
        `${f(s.map((x, i) => x - b[i]!))} µs per call (${rounds} rounds of ${calls} calls)`
    )
  }
}

/** Posts `method` on an inspector session. */
const post = <A>(session: Session, method: string): Promise<A> =>
  new Promise((resolve, reject) =>
    session.post(method, (error, result) => (error ? reject(error) : resolve(result as A)))
  )

/** The CPU profile of `calls` calls of `run` (after a warm-up), written to `out`. */
const profile = async (run: Run, concurrency: number, calls: number, out: string) => {
  await run(Math.min(calls, 2_000), concurrency)
  const session = new Session()
  session.connect()
  await post(session, "Profiler.enable")
  await post(session, "Profiler.start")
  const us = await cpuUsPerCall(run, calls, concurrency)
  const result = await post<{ readonly profile: unknown }>(session, "Profiler.stop")
  writeFileSync(out, JSON.stringify(result.profile))
  session.disconnect()
  console.log(`c=${concurrency}: ${us.toFixed(0)} CPU µs per call over ${calls} calls; profile in ${out}`)
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href
if (isMain) {
  const [mode, ...args] = process.argv.slice(2)
  const mock = await startMock()
  // The CPU mode runs the globals and the scheduler as they are.
  if (mode !== "cpu") instrument()
  const built = await subjects(mock.baseUrl)
  try {
    if (mode === "profile") {
      const [subject = "http gateway", concurrency = "64", calls = "10000", out = "asyncCost.cpuprofile"] = args
      const run = built.runs[subject]
      if (run === undefined) throw new Error(`asyncCost: no subject ${subject}`)
      await profile(run, Number(concurrency), Number(calls), out)
    } else if (mode === "cpu") {
      const [rounds, calls] = [Number(args[0] ?? 6), Number(args[1] ?? 2_000)]
      const pairs = (args[2] ?? "http,instant,echo").split(",")
      const { runs } = built
      for (const pair of pairs) {
        const [baseline, subject] = [runs[`${pair} adapter`], runs[`${pair} gateway`]]
        if (baseline === undefined || subject === undefined) throw new Error(`asyncCost: no pair ${pair}`)
        // The in-process pairs are cheap: more calls per round.
        await cpuPair(pair, baseline, subject, rounds, pair === "instant" || pair === "echo" ? calls * 5 : calls)
      }
    }
    else await table(built.runs, Number(mode ?? 2_000))
  } finally {
    await built.dispose()
    await mock.stop()
  }
}
