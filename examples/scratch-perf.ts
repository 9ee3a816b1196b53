import { Effect } from "effect"
import { buildGateway, command, instantAdapter, requestFor, target, workflow } from "./bench/fixtures.js"

const t = target("model://bench/instant@eu", "bench")
const wf = workflow("bench.call", [t.ref])
const stack = await buildGateway({ targets: [t], workflows: [wf], adapters: { bench: instantAdapter } })
const cmd = command("bench.call")
const direct = instantAdapter.generate(requestFor(cmd, t))
const via = stack.gateway.generate(cmd)
await Effect.runPromise(via)
const seq = async (eff: Effect.Effect<unknown, unknown>, n: number) => {
  const times: number[] = []
  const c0 = process.cpuUsage()
  for (let i = 0; i < n; i++) {
    const s = performance.now()
    await Effect.runPromise(eff)
    times.push(performance.now() - s)
  }
  const c = process.cpuUsage(c0)
  times.sort((a, b) => a - b)
  return { p50: times[n >> 1]! * 1000, cpu: ((c.user + c.system) / n) }
}
const thr = async (eff: Effect.Effect<unknown, unknown>, n: number) => {
  const s = performance.now()
  await Effect.runPromise(Effect.forEach(Array.from({ length: n }), () => eff, { concurrency: 1000, discard: true }))
  return (n / (performance.now() - s)) * 1000
}
for (let r = 0; r < 5; r++) {
  const d = await seq(direct, 5000)
  const g = await seq(via, 5000)
  const td = await thr(direct, 20000)
  const tg = await thr(via, 20000)
  console.log(`round ${r}: direct p50 ${d.p50.toFixed(1)}µs cpu ${d.cpu.toFixed(1)} | gateway p50 ${g.p50.toFixed(1)}µs cpu ${g.cpu.toFixed(1)} added p50 ${(g.p50 - d.p50).toFixed(1)} | thr direct ${td.toFixed(0)} gateway ${tg.toFixed(0)}`)
}
await stack.dispose()
