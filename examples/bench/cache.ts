/**
 * §7 Response cache: the cost of a hit in-process and its Redis round trips.
 *
 * - Hit p50: `gateway.generate` answered from the memory store (a classification workflow with an
 *   output schema and `cache: { ttl: 10 minutes }`), sequential, timed with `paired` against an
 *   empty `Effect.void` run (the subject's absolute p50 is the figure).
 * - Redis: the same gateway over the Redis store (`@modelgate/adapters/redis`), budgets in memory;
 *   per hit, the commands the hit path issues and the writes of the connection that carry them
 *   (one per command; a tick's commands leave together: this errs high), counted exactly
 *   (`countCommands`): the stores' background work (a breaker mirror's resync, an idle epoch check)
 *   is counted apart. Skipped without `redis-server`.
 */
import * as Redis from "@modelgate/adapters/redis"
import { GatewayConfig, ModelGateway, ResponseCache } from "@modelgate/core"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { CachePolicy, Workflow } from "@modelgate/core/Workflow"
import { startRedis } from "@modelgate/testing/RedisServer"
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import type { Redis as IORedis } from "ioredis"
import { Classification, command, jsonAdapter, realServices, structuredBody, target, workflow } from "./fixtures.js"
import { type PairedResult, paired, type Profile } from "./harness.js"
import { countCommands, listCounts, total } from "./redisCommands.js"

export interface CacheResults {
  /** A hit from the memory store, per call (µs), against an empty Effect run. */
  readonly hit: PairedResult
  /** Over the Redis store; skipped without `redis-server`. */
  readonly redis:
    | {
        /** Writes of the connection that carried a command of a hit, per hit (exact). */
        readonly roundTripsPerHit: number
        /** Commands issued by the hit path, per hit (exact). */
        readonly commandsPerHit: number
        /** Commands of the stores' background work (not the hits') during the hits. */
        readonly backgroundCommands: number
        readonly hits: number
      }
    | { readonly skipped: string }
}

const ref = "model://bench/cached@eu"

const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [target(ref, "bench")],
    workflows: [
      Workflow.make({
        ...workflow("bench.cached", [ref], "Classification"),
        cache: CachePolicy.make({ ttl: Duration.minutes(10), scope: "tenant" })
      })
    ]
  }),
  schemas: { Classification }
}

const stack = (cache: Layer.Layer<never> | Layer.Layer<ResponseCache.ResponseCache>) =>
  ModelGateway.layer(definition).pipe(
    Layer.provide(
      Layer.mergeAll(
        realServices(1_000),
        ProviderAdapter.layer("bench", Effect.succeed(jsonAdapter(structuredBody))),
        cache
      )
    )
  )

const cmd = command("bench.cached")

/** The gateway answers the command from the cache (the first call stores it). */
const warm = async (gateway: ModelGateway.Service) => {
  const first = await Effect.runPromise(gateway.generate(cmd))
  const again = await Effect.runPromise(gateway.generate(cmd))
  if (first.evidence.cache?.stored !== true || again.evidence.cache?.hit !== true) {
    throw new Error("bench cache: the command is not served from the cache")
  }
}

const memoryHit = async (profile: Profile): Promise<PairedResult> => {
  const runtime = ManagedRuntime.make(stack(Layer.empty))
  try {
    const gateway = await runtime.runPromise(ModelGateway.ModelGateway)
    await warm(gateway)
    const hit = Effect.suspend(() => gateway.generate(cmd))
    return await paired(
      profile,
      () => Effect.runPromise(Effect.void),
      () => Effect.runPromise(hit)
    )
  } finally {
    await runtime.dispose()
  }
}

const redisHits = async (hits: number): Promise<CacheResults["redis"]> => {
  let server: Awaited<ReturnType<typeof startRedis>>
  try {
    server = await startRedis()
  } catch (e) {
    return { skipped: `redis-server not available (${e instanceof Error ? e.message : String(e)})` }
  }
  let connection: IORedis | undefined
  const cache = Layer.scoped(
    ResponseCache.ResponseCache,
    Effect.map(Redis.make({ url: server.url, keyPrefix: "bench-cache:" }), (stores) => {
      connection = stores.connection
      return ResponseCache.make(stores.responseCache)
    })
  )
  const runtime = ManagedRuntime.make(stack(cache))
  try {
    const gateway = await runtime.runPromise(ModelGateway.ModelGateway)
    await warm(gateway)
    if (connection === undefined) throw new Error("bench cache: no Redis connection")
    const counter = countCommands(connection)
    const pause = () => new Promise((resolve) => setImmediate(resolve))
    const hit = counter.measured(gateway.generate(cmd))
    for (let i = 0; i < hits; i++) {
      const r = await Effect.runPromise(hit)
      if (r.evidence.cache?.hit !== true) throw new Error("bench cache: a miss among the hits")
      await pause()
    }
    const count = counter.count()
    counter.detach()
    process.stderr.write(
      `bench cache: over ${hits} hits, the hit path issued ${listCounts(count.measured)} in ${count.roundTrips} writes; background: ${listCounts(count.background)}\n`
    )
    return {
      roundTripsPerHit: count.roundTrips / hits,
      commandsPerHit: total(count.measured) / hits,
      backgroundCommands: total(count.background),
      hits
    }
  } finally {
    await runtime.dispose()
    await server.stop()
  }
}

export const run = async (profile: Profile, options: { readonly skipRedis?: boolean } = {}): Promise<CacheResults> => ({
  hit: await memoryHit(profile),
  redis:
    options.skipRedis === true
      ? { skipped: "disabled by option" }
      : await redisHits(profile.name === "smoke" ? 100 : 500)
})
