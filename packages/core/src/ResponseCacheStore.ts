/**
 * The persistence seam of the response cache: encoded answers by key, each with a time to live.
 * The memory store (this process only, a size bound with least-recently-used eviction) lives here;
 * a shared store (Redis, `@modelgate/adapters/redis`) lets several gateway processes share one
 * cache.
 *
 * Details
 *
 * - Keys are opaque digests built by the cache's one key function (never content).
 * - `get` answers `undefined` for a missing or expired entry; expiry is read from Effect's `Clock`
 *   (so `TestClock` drives it). `set` replaces an entry.
 * - Both fail with `StoreError` (`store: "cache"`) when the store cannot answer; the cache treats a
 *   failed read as a miss (fails open) and a failed write as nothing stored.
 *
 * @since 0.2.0
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import type { StoreError } from "./Errors.js"
import type { Entry } from "./internal/cache/entry.js"
import { attachFastGet } from "./internal/cache/fastGet.js"

/**
 * One stored answer: its encoded form and the epoch-ms instant it was stored.
 *
 * @since 0.2.0
 * @category Models
 */
export type { Entry } from "./internal/cache/entry.js"

/**
 * An entry as JSON text, for stores that keep strings (`Schema.decodeUnknownEither(EntryFromJson)`).
 *
 * @since 0.2.0
 * @category Schemas
 */
export const EntryFromJson: Schema.Schema<Entry, string> = Schema.parseJson(
  Schema.Struct({ value: Schema.String, storedAt: Schema.Number })
)

/**
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  readonly get: (key: string) => Effect.Effect<Entry | undefined, StoreError>
  /** Stores `entry` under `key` for `ttlMs` milliseconds. */
  readonly set: (key: string, entry: Entry, ttlMs: number) => Effect.Effect<void, StoreError>
}

/**
 * @since 0.2.0
 * @category Context
 */
export class ResponseCacheStore extends Context.Tag("@modelgate/core/ResponseCacheStore")<
  ResponseCacheStore,
  Service
>() {}

interface Slot {
  readonly entry: Entry
  readonly expiresAt: number
}

/**
 * Entries in this process's memory, at most `maxEntries` (default 10 000): the least recently read
 * or written goes first. Never fails.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeMemory = (options?: { readonly maxEntries?: number | undefined }): Service => {
  const max = Math.max(1, options?.maxEntries ?? 10_000)
  // A Map keeps insertion order: re-inserting on read moves an entry to the most recent end.
  const slots = new Map<string, Slot>()
  const get = (key: string, now: number): Entry | undefined => {
    const slot = slots.get(key)
    if (slot === undefined) return undefined
    slots.delete(key)
    if (slot.expiresAt <= now) return undefined
    slots.set(key, slot)
    return slot.entry
  }
  const store = ResponseCacheStore.of({
    get: (key) => Effect.map(Clock.currentTimeMillis, (now) => get(key, now)),
    set: (key, entry, ttlMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        slots.delete(key)
        slots.set(key, { entry, expiresAt: now + ttlMs })
        while (slots.size > max) {
          const oldest = slots.keys().next()
          if (oldest.done === true) break
          slots.delete(oldest.value)
        }
      })
  })
  // The cache reads this store at once (no round trip to bound by the deadline).
  return attachFastGet(store, get)
}

/**
 * A memory store per layer build ({@link makeMemory}).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory = (options?: { readonly maxEntries?: number | undefined }): Layer.Layer<ResponseCacheStore> =>
  Layer.sync(ResponseCacheStore, () => makeMemory(options))
