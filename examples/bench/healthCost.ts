/**
 * CPU per gateway call with and without `Health.layerMemory()` (the server's health service), one
 * target over the instant adapter: sequential and c=64 calls, rounds interleaved, CPU µs per call
 * from `process.cpuUsage`. `node healthCost.bundle.mjs [rounds] [calls]` (bundle: `healthCostRun.mjs`).
 */
import { Budgets, Concurrency, GatewayConfig, Health, ModelGateway, ProviderAdapter } from "@modelgate/core"
import { Effect, Layer, ManagedRuntime } from "effect"
import { command, instantAdapter, recorderNoop, target, workflow } from "./fixtures.js"

const build = async (health: Layer.Layer<Health.Health, unknown>) => {
  const definition: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({ targets: [target("t1", "p1")], workflows: [workflow("w", ["t1"])] })
  }
  const services = Layer.mergeAll(
    Budgets.layerMemory({ undeclaredTenants: { limit: 9_000_000, period: "monthly" } }),
    Concurrency.layerMemory({ permits: 20_000 }),
    health,
    recorderNoop,
    ProviderAdapter.layer("p1", Effect.succeed(instantAdapter))
  )
  const runtime = ManagedRuntime.make(ModelGateway.layer(definition).pipe(Layer.provide(services)))
  return runtime.runPromise(ModelGateway.ModelGateway)
}

const cpuPerCall = async (gateway: ModelGateway.Service, calls: number, concurrency: number) => {
  const cmd = command("w")
  const items = Array.from({ length: calls }, (_, i) => i)
  const start = process.cpuUsage()
  await Effect.runPromise(Effect.forEach(items, () => gateway.generate(cmd), { concurrency, discard: true }))
  const used = process.cpuUsage(start)
  return (used.user + used.system) / calls
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const rounds = Number(process.argv[2] ?? 5)
const calls = Number(process.argv[3] ?? 4000)
const profileOnly = process.argv[4] === "memory-only"
const off = await build(Health.layerOff)
const memory = await build(Health.layerMemory())
const results: Record<string, Array<number>> = { "off c=1": [], "memory c=1": [], "off c=64": [], "memory c=64": [] }
for (const c of [1, 64]) {
  await cpuPerCall(off, calls, c)
  await cpuPerCall(memory, calls, c)
}
for (let r = 0; r < rounds; r++) {
  for (const c of [1, 64]) {
    const order: ReadonlyArray<["off" | "memory", ModelGateway.Service]> =
      r % 2 === 0 ? [["off", off], ["memory", memory]] : [["memory", memory], ["off", off]]
    for (const [name, g] of order) {
      if (profileOnly && name === "off") continue
      results[`${name} c=${c}`]!.push(await cpuPerCall(g, calls, c))
    }
  }
}
const out: Record<string, unknown> = {}
for (const [k, v] of Object.entries(results)) {
  if (v.length > 0) out[k] = { median: Math.round(median(v) * 10) / 10, min: Math.round(Math.min(...v) * 10) / 10, max: Math.round(Math.max(...v) * 10) / 10 }
}
console.log(JSON.stringify(out))
process.exit(0)
