/**
 * §6 Shared state on Redis: the same gateway over the memory stores and over the Redis stores
 * (budgets, permits, breakers; `@modelgate/adapters/redis`) against a local `redis-server` this
 * section starts (skipped when `redis-server` is not on the PATH).
 *
 * - Throughput: calls/s at 256 concurrent fibers with a provider answering after 5 ms (each side
 *   its median over rounds), Redis ÷ memory. The same with a provider answering at once is listed
 *   as context: it is the stores' own cost, which a real provider's latency hides. Each side's CPU
 *   per call is reported too: this process's (user + system) and, for Redis, `redis-server`'s
 *   (`INFO cpu`), so that a ratio can be read as client CPU, server CPU or waiting.
 * - Round trips per call: 500 sequential calls; the writes of the client's connection (one per
 *   command; a tick's commands leave the corked socket together, so this errs high), cross-checked with the server's `total_reads_processed`. Scripts
 *   per call from `INFO commandstats`.
 */
import * as Redis from "@modelgate/adapters/redis"
import { Budgets, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import * as BreakerStore from "@modelgate/core/BreakerStore"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import * as PermitStore from "@modelgate/core/PermitStore"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Context, Duration, Effect, Layer, ManagedRuntime } from "effect"
import { Redis as IORedis } from "ioredis"
import { startRedis } from "@modelgate/testing/RedisServer"
import { command, instantAdapter, instantResponse, recorderNoop, target, workflow } from "./fixtures.js"
import { median, type Profile } from "./harness.js"

export interface RedisThroughput {
  readonly providerLatencyMs: number
  readonly memory: number
  readonly redis: number
  readonly ratio: number
  /** CPU µs per call of this process (user + system), memory stores and Redis stores (medians over rounds). */
  readonly memoryCpuUs: number
  readonly redisCpuUs: number
  /** CPU µs per call of `redis-server` (its `used_cpu_user` + `used_cpu_sys`), Redis stores. */
  readonly serverCpuUs: number
}

export interface RedisResults {
  readonly concurrency: number
  /** The verdict's case (a provider answering after 5 ms). */
  readonly throughput: RedisThroughput
  /** A provider answering at once: the stores' own cost. */
  readonly instant: RedisThroughput
  /** Writes of the client's connection per call (each a batch of commands whose replies it awaits). */
  readonly roundTripsPerCall: number
  /** The server's read events per call (a cross-check: coalesced writes read as one). */
  readonly serverReadsPerCall: number
  /** Scripts (`EVALSHA`/`EVAL`) per call. */
  readonly commandsPerCall: number
}

const providerLatencyMs = 5
const concurrency = 256

const delayedAdapter: Omit<ProviderAdapter.ProviderAdapter, "provider"> = {
  ...instantAdapter,
  generate: () => Effect.as(Effect.sleep(Duration.millis(providerLatencyMs)), instantResponse)
}

const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [target("model://bench/redis@eu", "bench")],
    workflows: [workflow("bench.redis", ["model://bench/redis@eu"])]
  }),
  schemas: {}
}

const budgets = { undeclaredTenants: { limit: 1_000_000, period: "monthly" as const } }
const permits = { permits: 10_000 }

/** The gateway over `stores` (budgets, permits, breakers) and `adapter`. */
const stack = (
  stores: Layer.Layer<BudgetStore.BudgetStore | PermitStore.PermitStore | BreakerStore.BreakerStore>,
  adapter: Omit<ProviderAdapter.ProviderAdapter, "provider">
) =>
  ModelGateway.layer(definition).pipe(
    Layer.provide(
      Layer.mergeAll(
        Budgets.layer(budgets),
        Concurrency.layer(permits),
        Health.layer(),
        recorderNoop,
        ProviderAdapter.layer("bench", Effect.succeed(adapter))
      ).pipe(Layer.provide(stores))
    )
  )

const memoryStores = Layer.mergeAll(BudgetStore.layerMemory, PermitStore.layerMemory, BreakerStore.layerMemory)

const redisStores = (url: string, prefix: string, onConnection: (connection: IORedis) => void = () => {}) =>
  Layer.scopedContext(
    Effect.map(Redis.make({ url, keyPrefix: prefix, commandTimeout: Duration.seconds(2) }), (s) => {
      onConnection(s.connection)
      return Context.make(BudgetStore.BudgetStore, s.budget).pipe(
        Context.add(PermitStore.PermitStore, s.permit),
        Context.add(BreakerStore.BreakerStore, s.breaker)
      )
    })
  )

/** `redis-server`'s CPU time so far (µs), from `INFO cpu`. */
const serverCpu = async (admin: IORedis) => {
  const info = await admin.info("cpu")
  const seconds = (field: string) => Number(new RegExp(`^${field}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0)
  return (seconds("used_cpu_user") + seconds("used_cpu_sys")) * 1e6
}

/** Calls/s of `total` calls, `concurrency` at a time, and this process's CPU µs per call. */
const timed = async (gateway: ModelGateway.Service, total: number) => {
  const cpu = process.cpuUsage()
  const perSecond = await throughputOf(gateway, total)
  const used = process.cpuUsage(cpu)
  return { perSecond, cpuUs: (used.user + used.system) / total }
}

/** Calls/s of `total` calls, `concurrency` at a time. */
const throughputOf = async (gateway: ModelGateway.Service, total: number): Promise<number> => {
  const cmd = command("bench.redis", "acme")
  let next = 0
  const worker = async () => {
    while (next < total) {
      next++
      await Effect.runPromise(gateway.generate(cmd))
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  return (total / (performance.now() - started)) * 1000
}

const measure = async (
  url: string,
  adapter: Omit<ProviderAdapter.ProviderAdapter, "provider">,
  latency: number,
  profile: Profile
): Promise<RedisThroughput> => {
  const rounds = profile.name === "smoke" ? 1 : 5
  const calls = profile.name === "smoke" ? 500 : 4_000
  const memory = ManagedRuntime.make(stack(memoryStores, adapter))
  const redis = ManagedRuntime.make(stack(redisStores(url, `bench-${latency}:`), adapter))
  const admin = new IORedis(url)
  try {
    const m = await memory.runPromise(ModelGateway.ModelGateway)
    const r = await redis.runPromise(ModelGateway.ModelGateway)
    // warm-up (JIT, script cache, connections)
    await throughputOf(m, 500)
    await throughputOf(r, 500)
    const ms: Array<{ readonly perSecond: number; readonly cpuUs: number }> = []
    const rs: Array<{ readonly perSecond: number; readonly cpuUs: number }> = []
    const servers: Array<number> = []
    for (let i = 0; i < rounds; i++) {
      ms.push(await timed(m, calls))
      const before = await serverCpu(admin)
      rs.push(await timed(r, calls))
      servers.push(((await serverCpu(admin)) - before) / calls)
    }
    const mm = median(ms.map((x) => x.perSecond))
    const rm = median(rs.map((x) => x.perSecond))
    return {
      providerLatencyMs: latency,
      memory: mm,
      redis: rm,
      ratio: rm / mm,
      memoryCpuUs: median(ms.map((x) => x.cpuUs)),
      redisCpuUs: median(rs.map((x) => x.cpuUs)),
      serverCpuUs: median(servers)
    }
  } finally {
    admin.disconnect()
    await memory.dispose()
    await redis.dispose()
  }
}

/** A counter of an `INFO` answer: `field` followed by digits (`total_reads_processed:`, `…:calls=`). */
const stat = (info: string, field: string) => {
  const at = info.indexOf(field.endsWith("=") ? field : `${field}:`)
  if (at < 0) return 0
  const digits = /^\d+/.exec(info.slice(at + field.length + (field.endsWith("=") ? 0 : 1)))
  return digits === null ? 0 : Number(digits[0])
}

/**
 * Round trips and commands per call over `calls` sequential calls (one process, one connection).
 * A round trip is one write of the client's connection (a batch of commands sent together, whose
 * replies the call waits for); counted on the client's socket, and cross-checked with the server's
 * read events. Calls are a macrotask apart, so that no batch can hold two calls' commands.
 */
const roundTrips = async (url: string, calls: number) => {
  let connection: IORedis | undefined
  const runtime = ManagedRuntime.make(
    stack(
      redisStores(url, "bench-rt:", (c) => {
        connection = c
      }),
      instantAdapter
    )
  )
  const admin = new IORedis(url)
  try {
    const gateway = await runtime.runPromise(ModelGateway.ModelGateway)
    const cmd = command("bench.redis", "acme")
    const pause = () => new Promise((resolve) => setImmediate(resolve))
    for (let i = 0; i < 50; i++) {
      await Effect.runPromise(gateway.generate(cmd))
      await pause()
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    // Every write of the client's socket is counted (measurement only: the original does the work).
    let writes = 0
    const socket = connection?.stream
    const write = socket?.write
    if (socket !== undefined && write !== undefined) {
      Object.defineProperty(socket, "write", {
        configurable: true,
        value: (...args: Array<unknown>) => {
          writes++
          return Reflect.apply(write, socket, args)
        }
      })
    }
    const stats = await admin.info("stats")
    const commandstats = await admin.info("commandstats")
    for (let i = 0; i < calls; i++) {
      await Effect.runPromise(gateway.generate(cmd))
      await pause()
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    const afterStats = await admin.info("stats")
    const afterCommands = await admin.info("commandstats")
    if (socket !== undefined) Reflect.deleteProperty(socket, "write")
    // The admin connection's own reads between the two readings: one INFO each side.
    const reads = stat(afterStats, "total_reads_processed") - stat(stats, "total_reads_processed") - 2
    const scripts = (x: string) => stat(x, "cmdstat_evalsha:calls=") + stat(x, "cmdstat_eval:calls=")
    return {
      roundTripsPerCall: writes / calls,
      serverReadsPerCall: reads / calls,
      commandsPerCall: (scripts(afterCommands) - scripts(commandstats)) / calls
    }
  } finally {
    admin.disconnect()
    await runtime.dispose()
  }
}

export const run = async (profile: Profile): Promise<RedisResults | { readonly skipped: string }> => {
  let server: Awaited<ReturnType<typeof startRedis>>
  try {
    server = await startRedis()
  } catch (e) {
    return { skipped: `redis-server not available (${e instanceof Error ? e.message : String(e)})` }
  }
  try {
    const { roundTripsPerCall, serverReadsPerCall, commandsPerCall } = await roundTrips(
      server.url,
      profile.name === "smoke" ? 100 : 500
    )
    const throughput = await measure(server.url, delayedAdapter, providerLatencyMs, profile)
    const instant = await measure(server.url, instantAdapter, 0, profile)
    return { concurrency, throughput, instant, roundTripsPerCall, serverReadsPerCall, commandsPerCall }
  } finally {
    await server.stop()
  }
}
