/**
 * The response cache: answers of opt-in workflows (`cache: { ttl, scope }`), by a key that one
 * function builds from the scope (the tenant, unless the workflow is explicitly `global`), the
 * workflow, its policy, prompt and schema versions, the sampling options and a digest of the
 * messages and tools. See `docs/caching.md`.
 *
 * Details
 *
 * - Reads fail open: a store that cannot answer (or not before the caller's deadline) is a miss,
 *   counted in `errors`; a failed write stores nothing and is counted too. Neither fails the call.
 * - Single flight: concurrent lookups of one key in this process wait for the first caller (each
 *   bounded by its own deadline), then read the cache again.
 * - Counters (`stats`): hits, misses, errors, and the bytes served and stored. No key content is
 *   ever logged or measured: only the short key id appears in evidence.
 *
 * @since 0.2.0
 */
import { Clock, Context, Effect, Layer, MetricLabel, Option } from "effect"
import * as ResponseCacheStore from "./ResponseCacheStore.js"
import { bounded } from "./internal/deadline.js"
import { type Key, type KeyInput, keyOf } from "./internal/cache/key.js"
import { type FastGet, fastGetOf } from "./internal/cache/fastGet.js"
import { makeSingleFlight, type Turn } from "./internal/cache/singleFlight.js"
import { cacheMetrics as metrics } from "./internal/metrics.js"

/**
 * An answer found in the cache: its encoded form, its age and the key id.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Hit {
  readonly value: string
  readonly ageMs: number
  readonly keyId: string
  /** The decoded answer saved with it, when the store is in this process's memory. */
  readonly decoded?: unknown
}

/**
 * Why a lookup did not serve a stored answer: `miss` (nothing stored, or the single flight's leader
 * stored nothing), `error` (the store failed or did not answer before the deadline: fail-open),
 * `refresh` (the read was skipped).
 *
 * @since 0.2.0
 * @category Models
 */
export type Lookup = "miss" | "error" | "refresh"

/**
 * @since 0.2.0
 * @category Models
 */
export interface Stats {
  readonly hits: number
  readonly misses: number
  readonly errors: number
  readonly bytesServed: number
  readonly bytesStored: number
}

/**
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  /**
   * Looks `input` up (fail-open, bounded by the epoch-ms `until`); on a miss, runs `onMiss` with a
   * `save` for its answer, as the single flight's leader when no identical call is in flight, else
   * after waiting for that call. `refresh`: skip the read (the answer is called and stored again).
   */
  readonly cached: <A, E, R>(
    input: KeyInput,
    options: { readonly until: number; readonly ttlMs: number; readonly refresh?: boolean | undefined },
    onHit: (hit: Hit) => Effect.Effect<A, E, R>,
    onMiss: (
      keyId: string,
      save: (value: string, decoded?: unknown) => Effect.Effect<boolean>,
      lookup: Lookup
    ) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  readonly stats: Effect.Effect<Stats>
  /**
   * Counts one lookup of `workflow` in `modelgate.cache.lookups` (and `modelgate.cache.bytes` served for a `hit`, stored
   * otherwise). Labels are made once per workflow and outcome. Synchronous: for the call path.
   */
  readonly unsafeCount: (workflow: string, outcome: Lookup | "hit" | "bypass", bytes: number | undefined) => void
}

/**
 * @since 0.2.0
 * @category Context
 */
export class ResponseCache extends Context.Tag("@modelgate/core/ResponseCache")<ResponseCache, Service>() {}

/**
 * A cache over `store`.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make = (store: ResponseCacheStore.Service): Service => {
  const counts = { hits: 0, misses: 0, errors: 0, bytesServed: 0, bytesStored: 0 }
  const flight = makeSingleFlight()

  const entryHit = (entry: ResponseCacheStore.Entry, key: Key) =>
    Effect.map(
      Clock.currentTimeMillis,
      (now): Hit => ({
        value: entry.value,
        ageMs: Math.max(0, now - entry.storedAt),
        keyId: key.id,
        decoded: entry.decoded
      })
    )

  const failed = Effect.sync((): "error" => {
    counts.errors++
    return "error"
  })

  // A store in this process's memory answers at once: nothing to bound.
  const fastGet = fastGetOf(store)

  /** The entry of `key` in this process's memory at `now`, or `miss`. */
  const readNow = (get: FastGet, key: Key, now: number): Hit | "miss" => {
    const entry = get(key.digest, now)
    return entry === undefined
      ? "miss"
      : { value: entry.value, ageMs: Math.max(0, now - entry.storedAt), keyId: key.id, decoded: entry.decoded }
  }

  /** The stored answer, `miss`, or `error` (the store failed or did not answer by `until`). */
  const read = (key: Key, until: number): Effect.Effect<Hit | "miss" | "error"> =>
    fastGet !== undefined
      ? Effect.clockWith((clock) => Effect.succeed(readNow(fastGet, key, clock.unsafeCurrentTimeMillis())))
      : boundedRead(key, until)

  const boundedRead = (key: Key, until: number): Effect.Effect<Hit | "miss" | "error"> =>
    bounded(store.get(key.digest), until).pipe(
      Effect.flatMap(
        (found): Effect.Effect<Hit | "miss" | "error"> =>
          Option.isNone(found)
            ? failed
            : found.value === undefined
              ? Effect.succeed("miss" as const)
              : entryHit(found.value, key)
      ),
      Effect.catchAll(() => failed)
    )

  /** Stores `value` (bounded by `until`); `true` when the store took it. */
  const saver =
    (key: Key, ttlMs: number, until: number) =>
    (value: string, decoded?: unknown): Effect.Effect<boolean> =>
      bounded(
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          store.set(
            key.digest,
            decoded === undefined ? { value, storedAt: now } : { value, storedAt: now, decoded },
            ttlMs
          )
        ),
        until
      ).pipe(
        Effect.matchEffect({
          onFailure: () => Effect.as(failed, false),
          onSuccess: (done) =>
            Option.isNone(done)
              ? Effect.as(failed, false)
              : Effect.sync(() => {
                  counts.bytesStored += value.length
                  return true
                })
        })
      )

  const served = <A, E, R>(hit: Hit, onHit: (hit: Hit) => Effect.Effect<A, E, R>) => {
    counts.hits++
    counts.bytesServed += hit.value.length
    return onHit(hit)
  }

  // Metric labels per workflow and outcome, made once (a new label array per update would make
  // the metric registry build a new key each time). Bounded: names from the configuration.
  const labels = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
  const labelsOf = (workflow: string, outcome: string) => {
    const id = `${outcome}\u0000${workflow}`
    let l = labels.get(id)
    if (l === undefined) {
      if (labels.size >= 10_000) labels.clear()
      l = [MetricLabel.make("workflow", workflow), MetricLabel.make("outcome", outcome)]
      labels.set(id, l)
    }
    return l
  }

  return ResponseCache.of({
    stats: Effect.sync(() => ({ ...counts })),
    unsafeCount: (workflow, outcome, bytes) => {
      metrics.lookups.unsafeUpdate(1, labelsOf(workflow, outcome))
      if (bytes !== undefined && bytes > 0) {
        metrics.bytes.unsafeUpdate(bytes, labelsOf(workflow, outcome === "hit" ? "served" : "stored"))
      }
    },
    cached: (input, options, onHit, onMiss) =>
      Effect.suspend(() => {
        const key = keyOf(input)
        // Made on a miss only: a hit runs none of it.
        const miss = (lookup: Lookup) => {
          counts.misses++
          return onMiss(key.id, saver(key, options.ttlMs, options.until), lookup)
        }
        const answer = (hit: Hit | Lookup) =>
          typeof hit !== "string"
            ? served(hit, onHit)
            : flight.run(key.digest, options.until, (turn: Turn) =>
                turn !== "followed"
                  ? miss(hit)
                  : Effect.flatMap(read(key, options.until), (again) =>
                      typeof again !== "string" ? served(again, onHit) : miss(again)
                    )
              )
        if (options.refresh === true) return answer("refresh")
        // In this process's memory: read at once, in this step.
        return fastGet !== undefined
          ? Effect.clockWith((clock) => answer(readNow(fastGet, key, clock.unsafeCurrentTimeMillis())))
          : Effect.flatMap(read(key, options.until), answer)
      })
  })
}

export const layer: Layer.Layer<ResponseCache, never, ResponseCacheStore.ResponseCacheStore> = Layer.effect(
  ResponseCache,
  Effect.map(ResponseCacheStore.ResponseCacheStore, make)
)

/**
 * A cache over a memory store of at most `maxEntries` entries.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory = (options?: { readonly maxEntries?: number | undefined }): Layer.Layer<ResponseCache> =>
  Layer.sync(ResponseCache, () => make(ResponseCacheStore.makeMemory(options)))

export type { KeyInput, Scope } from "./internal/cache/key.js"
