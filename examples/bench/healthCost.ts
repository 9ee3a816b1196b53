/**
 * CPU per gateway call with and without `Health.layerMemory()` (the server's health service) over
 * the instant adapter: one target in route order, and two targets under scored selection (which
 * reads route health); sequential and c=64 calls, rounds interleaved, CPU µs per call from
 * `process.cpuUsage`. `node healthCost.bundle.mjs [rounds] [calls]` (bundle: `healthCostRun.mjs`).
 */
import { Budgets, Concurrency, GatewayConfig, Health, ModelGateway, ProviderAdapter } from "@modelgate/core"
import { Workflow } from "@modelgate/core/Workflow"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { command, instantAdapter, recorderNoop, target, workflow } from "./fixtures.js"

/** Scored selection over two targets: the router reads both routes' health per call. */
const scored = Schema.decodeSync(Workflow)({
  name: "scored",
  policyVersion: "bench-policy-1",
  prompt: { id: "scored.prompt", version: "1" },
  route: ["t1", "t2"],
  timeout: 60_000,
  regions: ["eu"],
  dataClass: "internal",
  selection: "scored"
})

const build = async (health: Layer.Layer<Health.Health, unknown>) => {
  const definition: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({
      targets: [target("t1", "p1"), target("t2", "p1")],
      workflows: [workflow("w", ["t1"]), scored]
    })
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

const cpuPerCall = async (gateway: ModelGateway.Service, name: string, calls: number, concurrency: number) => {
  const cmd = command(name)
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
const only = process.argv[4]
const off = await build(Health.layerOff)
const memory = await build(Health.layerMemory())
const results: Record<string, Array<number>> = {}
const workflows = (process.env.HEALTH_COST_WORKFLOWS ?? "w,scored").split(",")
for (const wf of workflows) {
  for (const c of [1, 64]) {
    await cpuPerCall(off, wf, calls, c)
    await cpuPerCall(memory, wf, calls, c)
  }
}
for (let r = 0; r < rounds; r++) {
  for (const wf of workflows) {
    for (const c of [1, 64]) {
      const order: ReadonlyArray<["off" | "memory", ModelGateway.Service]> =
        r % 2 === 0
          ? [
              ["off", off],
              ["memory", memory]
            ]
          : [
              ["memory", memory],
              ["off", off]
            ]
      for (const [name, g] of order) {
        if (only !== undefined && name !== only) continue
        const key = `${wf} ${name} c=${c}`
        results[key] = [...(results[key] ?? []), await cpuPerCall(g, wf, calls, c)]
      }
    }
  }
}
const out: Record<string, unknown> = {}
for (const [k, v] of Object.entries(results)) {
  if (v.length > 0)
    out[k] = {
      median: Math.round(median(v) * 10) / 10,
      min: Math.round(Math.min(...v) * 10) / 10,
      max: Math.round(Math.max(...v) * 10) / 10
    }
}
console.log(JSON.stringify(out))
process.exit(0)
