/**
 * §4 Memory, over the real in-memory Budgets and Concurrency layers (heap measured after
 * `global.gc()`; the suite runs with `--expose-gc`):
 *
 * - per in-flight call: N calls hanging in the adapter (until a `Deferred` is released) through
 *   the gateway vs the same N calls made to the adapter directly;
 * - per idle tenant: N calls by N distinct tenants vs N calls by one tenant, all finished.
 */
import type * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Deferred, Effect, Fiber, Option } from "effect"
import { buildGateway, command, hangingAdapter, instantAdapter, requestFor, target, workflow } from "./fixtures.js"
import { collectGarbage, type Profile } from "./harness.js"

export interface MemoryResults {
  readonly gcAvailable: boolean
  readonly count: number
  /** Bytes per in-flight call. */
  readonly inFlight: { readonly direct: number; readonly gateway: number; readonly added: number }
  /**
   * The same, over an adapter that owns its deadline (`generateUntil`, as the HTTP adapters do):
   * the attempt needs no forked fiber and no timer of the gateway's.
   */
  readonly inFlightOwned: { readonly direct: number; readonly gateway: number; readonly added: number }
  /** Bytes retained per tenant after its call finished. */
  readonly tenants: { readonly oneTenant: number; readonly manyTenants: number; readonly perTenant: number }
}

const heap = () => {
  collectGarbage()
  return process.memoryUsage().heapUsed
}

/** Waits (on the event loop) until `done()` holds. */
const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setImmediate(resolve))
}

/** Heap bytes per call while `count` calls of `call` hang, then releases them. */
const inFlightBytes = async (
  count: number,
  start: (release: Deferred.Deferred<void>, counter: { entered: number }) => Effect.Effect<unknown, unknown>
) => {
  const release = Effect.runSync(Deferred.make<void>())
  const counter = { entered: 0 }
  const call = start(release, counter)
  const items = Array.from({ length: count }, (_, i) => i)
  const before = heap()
  const fiber = Effect.runFork(Effect.forEach(items, () => call, { concurrency: "unbounded", discard: true }))
  await until(() => counter.entered >= count)
  const during = heap()
  Effect.runSync(Deferred.succeed(release, undefined))
  await Effect.runPromise(Fiber.join(fiber))
  return (during - before) / count
}

const measureInFlight = async (count: number, rounds: number, owned: boolean) => {
  const t = target("model://bench/hang@eu", "bench")
  let current: { release: Deferred.Deferred<void>; counter: { entered: number } } | undefined
  // The gateway's adapter forwards to whichever hanging adapter the current run set up.
  const adapter: Omit<ProviderAdapter.ProviderAdapter, "provider"> = {
    generate: (request) => Effect.suspend(() => hangingAdapter(current!.release, current!.counter).generate(request)),
    stream: instantAdapter.stream
  }
  // An adapter that bounds itself, as the HTTP adapters do (the hanging call is released, not cut).
  const owning: Omit<ProviderAdapter.ProviderAdapter, "provider"> = {
    ...adapter,
    generateUntil: (request) => Effect.map(adapter.generate(request), Option.some)
  }
  const stack = await buildGateway({
    targets: [t],
    workflows: [workflow("bench.hang", [t.ref])],
    adapters: { bench: owned ? owning : adapter },
    permits: count * 2
  })
  try {
    const cmd = command("bench.hang")
    const request = requestFor(cmd, t)
    const direct = (release: Deferred.Deferred<void>, counter: { entered: number }) => {
      current = { release, counter }
      return adapter.generate(request)
    }
    const viaGateway = (release: Deferred.Deferred<void>, counter: { entered: number }) => {
      current = { release, counter }
      return stack.gateway.generate(cmd)
    }
    // Warm-up at a tenth of the size, then the measured runs (direct first, then gateway).
    await inFlightBytes(Math.ceil(count / 10), direct)
    await inFlightBytes(Math.ceil(count / 10), viaGateway)
    const d: Array<number> = []
    const g: Array<number> = []
    for (let round = 0; round < rounds; round++) {
      d.push(await inFlightBytes(count, direct))
      g.push(await inFlightBytes(count, viaGateway))
    }
    const directBytes = Math.min(...d)
    const gatewayBytes = Math.min(...g)
    return { direct: directBytes, gateway: gatewayBytes, added: gatewayBytes - directBytes }
  } finally {
    await stack.dispose()
  }
}

/** Heap bytes retained per call after `count` calls by `tenantOf(i)` finished (fresh gateway). */
const retainedBytes = async (count: number, tenantOf: (i: number) => string) => {
  const t = target("model://bench/instant@eu", "bench")
  const stack = await buildGateway({
    targets: [t],
    workflows: [workflow("bench.tenant", [t.ref])],
    adapters: { bench: instantAdapter }
  })
  try {
    // Commands exist before the first heap reading: only what the gateway keeps is counted.
    const commands = Array.from({ length: count }, (_, i) => command("bench.tenant", tenantOf(i)))
    const before = heap()
    await Effect.runPromise(
      Effect.forEach(commands, (c) => stack.gateway.generate(c), { concurrency: 100, discard: true })
    )
    const after = heap()
    // Keep the commands alive until after the second reading.
    if (commands.length !== count) throw new Error("unreachable")
    return (after - before) / count
  } finally {
    await stack.dispose()
  }
}

export const run = async (profile: Profile): Promise<MemoryResults> => {
  const count = profile.memoryCount
  const gcAvailable = collectGarbage()
  // In flight: one measured round (stable to a few % run to run) keeps the section short.
  const inFlight = await measureInFlight(count, 1, false)
  const inFlightOwned = await measureInFlight(count, 1, true)
  // Idle tenants: the figure is a small difference of two readings, so the lowest of two rounds.
  const rounds = Math.min(2, profile.rounds)
  // Warm-up (JIT, metric label caches), then one tenant vs many tenants.
  await retainedBytes(Math.ceil(count / 10), (i) => `warm-${i}`)
  const one: Array<number> = []
  const many: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    one.push(await retainedBytes(count, () => "acme"))
    many.push(await retainedBytes(count, (i) => `tenant-${round}-${i}`))
  }
  const oneTenant = Math.min(...one)
  const manyTenants = Math.min(...many)
  return {
    gcAvailable,
    count,
    inFlight,
    inFlightOwned,
    tenants: { oneTenant, manyTenants, perTenant: manyTenants - oneTenant }
  }
}
