/**
 * Where the heap of an in-flight gateway call is allocated: `count` gateway calls hang in a plain
 * adapter (one that cannot bound its own deadline, as `memory.inFlight` measures) while V8's
 * sampling heap profiler records the allocation stack of every sampled object still alive. A few
 * seconds, against minutes for a heap snapshot of the same calls.
 *
 * Bundle it (from `examples/`), as `run.mjs` does for the suite, then:
 *
 *     node --expose-gc /tmp/heapSites.mjs [count] [out.json] [direct]
 *
 * (`direct`: the same calls made to the adapter alone, the baseline `memory.ts` subtracts.)
 * prints the live bytes per call by allocating function (the adapter's and `Effect.forEach`'s own
 * share included: compare with `memory.ts`'s direct figure) and writes the raw sampling profile.
 * Lines are the bundle's (the profiler does not apply source maps): the `// path` comment above a
 * line in the bundle names its source module.
 */
import type * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Deferred, Effect, Fiber } from "effect"
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { buildGateway, command, hangingAdapter, requestFor, target, workflow } from "./fixtures.js"
import { collectGarbage } from "./harness.js"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}

interface SampleNode {
  readonly callFrame: CallFrame
  readonly selfSize: number
  readonly children: ReadonlyArray<SampleNode>
}

/** Posts `method` on an inspector session. */
const post = <A>(session: Session, method: string, params: object = {}): Promise<A> =>
  new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result as A)))
  )

/** Live sampled bytes by allocating function (`name url:line`). */
const bySite = (root: SampleNode): Map<string, number> => {
  const sites = new Map<string, number>()
  const visit = (node: SampleNode) => {
    const f = node.callFrame
    if (node.selfSize > 0) {
      const key = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop() ?? ""}:${f.lineNumber}`
      sites.set(key, (sites.get(key) ?? 0) + node.selfSize)
    }
    for (const child of node.children) visit(child)
  }
  visit(root)
  return sites
}

const run = async (count: number, out: string, direct: boolean) => {
  const t = target("model://bench/hang@eu", "bench")
  // The adapter hangs each call on the release of the round it is in.
  const round = { release: Effect.runSync(Deferred.make<void>()), counter: { entered: 0 } }
  const adapter: Omit<ProviderAdapter.ProviderAdapter, "provider"> = {
    generate: (request) => Effect.suspend(() => hangingAdapter(round.release, round.counter).generate(request)),
    stream: () => Effect.die("heapSites: no stream")
  }
  const stack = await buildGateway({
    targets: [t],
    workflows: [workflow("bench.hang", [t.ref])],
    adapters: { bench: adapter },
    permits: count * 2
  })
  const session = new Session()
  session.connect()
  const cmd = command("bench.hang")
  // `direct`: the same calls made to the adapter alone (what `memory.ts` subtracts).
  const request = requestFor(cmd, t)
  const call: Effect.Effect<unknown, unknown> = direct
    ? Effect.suspend(() => adapter.generate(request))
    : Effect.suspend(() => stack.gateway.generate(cmd))
  const items = Array.from({ length: count }, (_, i) => i)
  try {
    // Two unsampled rounds (JIT, label caches), then the sampled one.
    for (const sampled of [false, false, true]) {
      round.release = Effect.runSync(Deferred.make<void>())
      round.counter = { entered: 0 }
      collectGarbage()
      if (sampled) await post(session, "HeapProfiler.startSampling", { samplingInterval: 32 })
      const fiber = Effect.runFork(Effect.forEach(items, () => call, { concurrency: "unbounded", discard: true }))
      while (round.counter.entered < count) await new Promise((resolve) => setImmediate(resolve))
      if (sampled) {
        collectGarbage()
        const { profile } = await post<{ readonly profile: { readonly head: SampleNode } }>(
          session,
          "HeapProfiler.getSamplingProfile"
        )
        await post(session, "HeapProfiler.stopSampling")
        writeFileSync(out, JSON.stringify(profile))
        const sites = [...bySite(profile.head)].sort((a, b) => b[1] - a[1])
        const total = sites.reduce((sum, [, bytes]) => sum + bytes, 0)
        console.log(`live sampled heap: ${(total / count).toFixed(0)} B per in-flight call (${count} calls)`)
        for (const [site, bytes] of sites.slice(0, 40))
          console.log(`${(bytes / count).toFixed(0).padStart(7)} B  ${site}`)
      }
      Effect.runSync(Deferred.succeed(round.release, undefined))
      await Effect.runPromise(Fiber.join(fiber))
    }
  } finally {
    session.disconnect()
    await stack.dispose()
  }
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href
if (isMain) {
  await run(Number(process.argv[2] ?? 5_000), process.argv[3] ?? "heapSites.json", process.argv[4] === "direct")
}
