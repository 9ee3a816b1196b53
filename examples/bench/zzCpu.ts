// temporary A/B measurement (not committed): CPU µs per call of the gateway over the Redis stores
import * as Redis from "@modelgate/adapters/redis"
import { Budgets, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import * as BreakerStore from "@modelgate/core/BreakerStore"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import * as PermitStore from "@modelgate/core/PermitStore"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Context, Duration, Effect, Layer, ManagedRuntime } from "effect"
import { command, instantAdapter, recorderNoop, target, workflow } from "./fixtures.js"

const url = process.argv[2] ?? "redis://127.0.0.1:6390"
const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [target("model://bench/redis@eu", "bench")],
    workflows: [workflow("bench.redis", ["model://bench/redis@eu"])]
  }),
  schemas: {}
}
const stores = Layer.scopedContext(
  Effect.map(Redis.make({ url, keyPrefix: `cpu${process.pid}:`, commandTimeout: Duration.seconds(2) }), (s) =>
    Context.make(BudgetStore.BudgetStore, s.budget).pipe(
      Context.add(PermitStore.PermitStore, s.permit),
      Context.add(BreakerStore.BreakerStore, s.breaker)
    )
  )
)
const layer = ModelGateway.layer(definition).pipe(
  Layer.provide(
    Layer.mergeAll(
      Budgets.layer({ undeclaredTenants: { limit: 9_000_000, period: "monthly" } }),
      Concurrency.layer({ permits: 10_000 }),
      Health.layer(),
      recorderNoop,
      ProviderAdapter.layer("bench", Effect.succeed(instantAdapter))
    ).pipe(Layer.provide(stores))
  )
)
const runtime = ManagedRuntime.make(layer)
const gateway = await runtime.runPromise(ModelGateway.ModelGateway)
const cmd = command("bench.redis", "acme")
const run = async (total: number) => {
  let next = 0
  const worker = async () => {
    while (next < total) {
      next++
      await Effect.runPromise(gateway.generate(cmd))
    }
  }
  await Promise.all(Array.from({ length: 256 }, worker))
}
await run(3000)
const cpus: Array<number> = []
const rates: Array<number> = []
for (let i = 0; i < 5; i++) {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await run(6000)
  const c = process.cpuUsage(c0)
  rates.push(6000 / ((performance.now() - t0) / 1000))
  cpus.push((c.user + c.system) / 6000)
}
const med = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0
process.stdout.write(
  `${process.argv[3] ?? ""} cpuUsPerCall ${med(cpus).toFixed(1)} callsPerS ${med(rates).toFixed(0)}\n`
)
await runtime.dispose()
process.exit(0)
