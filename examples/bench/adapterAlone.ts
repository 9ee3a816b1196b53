/**
 * The OpenAI adapter alone against the bench's loopback mock (the `adapter` subject of `http.ts`),
 * for profiling it and for comparing two builds of it in one process.
 *
 * Bundle it (from `examples/`), as `run.mjs` does:
 *
 *     npx esbuild bench/adapterAlone.ts --bundle --platform=node --format=esm --conditions=source \
 *       --sourcemap --outfile=/tmp/adapter.mjs \
 *       --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
 *
 * - `node /tmp/adapter.mjs loop [concurrency] [calls] [out.cpuprofile]`: `calls` `generate` calls
 *   with `concurrency` in flight (after a warm-up), then CPU µs per call; with a path, the CPU
 *   profile of the measured calls (inspector `Profiler`) is written there;
 * - `node --expose-gc /tmp/adapter.mjs ab before.mjs after.mjs [rounds] [calls]`: two bundles of
 *   this file (two builds of the adapter) in this process, on one mock server, in alternating
 *   rounds at c=1 and c=64 (each round after a full GC); medians of CPU µs per call and of the
 *   per-round ratio after ÷ before.
 */
import * as OpenAi from "@modelgate/adapters/openai"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { pathToFileURL } from "node:url"
import { answerText, command, requestFor, target } from "./fixtures.js"
import { startMock } from "./mockProcess.js"

/** A subject: `calls` calls with `concurrency` in flight. */
export interface Subject {
  readonly run: (calls: number, concurrency: number) => Promise<void>
  readonly dispose: () => Promise<void>
}

/** The OpenAI adapter over the adapters' default transport, calling `baseUrl`. */
export const makeSubject = async (baseUrl: string): Promise<Subject> => {
  // The HttpClient is there for `make`'s type: the transport in context is the one used.
  const runtime = ManagedRuntime.make(Layer.merge(HttpTransport.layerUndici(), NodeHttpClient.layerUndici))
  const adapter = await runtime.runPromise(OpenAi.make({ baseUrl, apiKey: Redacted.make("sk-bench-not-a-secret") }))
  const t = target("model://openai/bench@eu", "openai")
  const request = requestFor(command("bench.http"), t)
  const check = await Effect.runPromise(adapter.generate(request))
  if (check.text !== answerText) throw new Error(`adapterAlone: got ${JSON.stringify(check.text)}`)
  const call = Effect.suspend(() => adapter.generate(request))
  return {
    run: (calls, concurrency) =>
      Effect.runPromise(
        Effect.forEach(
          Array.from({ length: calls }, (_, i) => i),
          () => call,
          { concurrency, discard: true }
        )
      ),
    dispose: () => runtime.dispose()
  }
}

const cpuUsPerCall = async (subject: Subject, calls: number, concurrency: number) => {
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const start = process.cpuUsage()
  await subject.run(calls, concurrency)
  const used = process.cpuUsage(start)
  return (used.user + used.system) / calls
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Posts `method` on an inspector session. */
const post = <A>(session: Session, method: string): Promise<A> =>
  new Promise((resolve, reject) =>
    session.post(method, (error, result) => (error ? reject(error) : resolve(result as A)))
  )

const loop = async (baseUrl: string, concurrency: number, calls: number, profile: string | undefined) => {
  const subject = await makeSubject(baseUrl)
  await subject.run(Math.min(calls, 2_000), concurrency)
  const session = new Session()
  if (profile !== undefined) {
    session.connect()
    await post(session, "Profiler.enable")
    await post(session, "Profiler.start")
  }
  const us = await cpuUsPerCall(subject, calls, concurrency)
  if (profile !== undefined) {
    const result = await post<{ readonly profile: unknown }>(session, "Profiler.stop")
    writeFileSync(profile, JSON.stringify(result.profile))
    session.disconnect()
  }
  console.log(`adapter alone, c=${concurrency}: ${us.toFixed(0)} CPU µs per call over ${calls} calls`)
  await subject.dispose()
}

const ab = async (baseUrl: string, before: string, after: string, rounds: number, calls: number) => {
  const load = async (path: string): Promise<Subject> => {
    // A query of its own: the bundle running this may be one of the two (its own instance is
    // still evaluating, importing it would wait for itself).
    const url = `${pathToFileURL(path).href}?subject`
    const module: { readonly makeSubject: (url: string) => Promise<Subject> } = await import(url)
    return module.makeSubject(baseUrl)
  }
  const subjects = [await load(before), await load(after)] as const
  for (const concurrency of [1, 64]) {
    for (const subject of subjects) await subject.run(calls, concurrency)
    const cpu: [Array<number>, Array<number>] = [[], []]
    const ratios: Array<number> = []
    for (let round = 0; round < rounds; round++) {
      // Alternate which build goes first.
      const order = round % 2 === 0 ? [0, 1] : [1, 0]
      const perRound: [number, number] = [0, 0]
      for (const i of order) {
        const subject = subjects[i as 0 | 1]
        perRound[i as 0 | 1] = await cpuUsPerCall(subject, calls, concurrency)
        cpu[i as 0 | 1].push(perRound[i as 0 | 1])
      }
      ratios.push(perRound[1] / perRound[0])
    }
    console.log(
      `c=${concurrency}: before ${median(cpu[0]).toFixed(0)} µs, after ${median(cpu[1]).toFixed(0)} µs per call ` +
        `(after ÷ before ${median(ratios).toFixed(3)}; ${rounds} rounds of ${calls} calls)`
    )
  }
  for (const subject of subjects) await subject.dispose()
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href
if (isMain) {
  const [mode = "loop", ...args] = process.argv.slice(2)
  const mock = await startMock()
  try {
    if (mode === "ab") {
      const [before, after, rounds = "10", calls = "2000"] = args
      if (before === undefined || after === undefined) throw new Error("usage: ab <before.mjs> <after.mjs>")
      await ab(mock.baseUrl, before, after, Number(rounds), Number(calls))
    } else {
      await loop(mock.baseUrl, Number(args[0] ?? 64), Number(args[1] ?? 20_000), args[2])
    }
  } finally {
    await mock.stop()
  }
}
