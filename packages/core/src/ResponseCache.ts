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
import { Clock, Context, Effect, Layer, Option } from "effect"
import * as ResponseCacheStore from "./ResponseCacheStore.js"
import { bounded } from "./internal/deadline.js"
import { type Key, type KeyInput, keyOf } from "./internal/cache/key.js"
import { makeSingleFlight, type Turn } from "./internal/cache/singleFlight.js"

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
}

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
    onMiss: (keyId: string, save: (value: string) => Effect.Effect<void>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  readonly stats: Effect.Effect<Stats>
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

  const entryHit = (entry: ResponseCacheStore.Entry | undefined, key: Key) =>
    entry === undefined
      ? Effect.succeed(undefined)
      : Effect.map(Clock.currentTimeMillis, (now) => ({
          value: entry.value,
          ageMs: Math.max(0, now - entry.storedAt),
          keyId: key.id
        }))

  const read = (key: Key, until: number): Effect.Effect<Hit | undefined> =>
    bounded(store.get(key.digest), until).pipe(
      Effect.flatMap((found) =>
        Option.isNone(found)
          ? Effect.sync(() => {
              counts.errors++
              return undefined
            })
          : entryHit(found.value, key)
      ),
      Effect.catchAll(() =>
        Effect.sync(() => {
          counts.errors++
          return undefined
        })
      )
    )

  const saver =
    (key: Key, ttlMs: number) =>
    (value: string): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => store.set(key.digest, { value, storedAt: now }, ttlMs)).pipe(
        Effect.matchEffect({
          onFailure: () =>
            Effect.sync(() => {
              counts.errors++
            }),
          onSuccess: () =>
            Effect.sync(() => {
              counts.bytesStored += value.length
            })
        })
      )

  const served = <A, E, R>(hit: Hit, onHit: (hit: Hit) => Effect.Effect<A, E, R>) => {
    counts.hits++
    counts.bytesServed += hit.value.length
    return onHit(hit)
  }

  return ResponseCache.of({
    stats: Effect.sync(() => ({ ...counts })),
    cached: (input, options, onHit, onMiss) =>
      Effect.suspend(() => {
        const key = keyOf(input)
        const save = saver(key, options.ttlMs)
        const miss = () => {
          counts.misses++
          return onMiss(key.id, save)
        }
        const first = options.refresh === true ? Effect.succeed(undefined) : read(key, options.until)
        return Effect.flatMap(first, (hit) =>
          hit !== undefined
            ? served(hit, onHit)
            : flight.run(key.digest, options.until, (turn: Turn) =>
                turn !== "followed"
                  ? miss()
                  : Effect.flatMap(read(key, options.until), (again) =>
                      again !== undefined ? served(again, onHit) : miss()
                    )
              )
        )
      })
  })
}

/**
 * @since 0.2.0
 * @category Layers
 */
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
export { globalScope, tenantScope } from "./internal/cache/key.js"
