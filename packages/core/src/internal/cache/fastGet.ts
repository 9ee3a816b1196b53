/**
 * The memory store's synchronous read, attached to the store value under a private symbol (the
 * `internal/fastPath.ts` idiom, kept to the cache): the cache then reads an in-memory entry at
 * once, without bounding a store round trip by the deadline (a fiber and a timer per lookup).
 * A wrapper made by spreading the store has no slot, so its own `get` is what runs.
 *
 * @internal
 */
import type { Entry } from "./entry.js"

const slot: unique symbol = Symbol.for("@modelgate/core/ResponseCacheStore/fastGet")

/** `get` at the epoch-ms instant `now`, answered at once. */
export type FastGet = (key: string, now: number) => Entry | undefined

/** Attaches `get` to `store` (non-enumerable) and returns the store. */
export const attachFastGet = <S extends object>(store: S, get: FastGet): S => {
  Object.defineProperty(store, slot, { value: get, enumerable: false })
  return store
}

/** The synchronous read of `store`, when it has one. */
export const fastGetOf = (store: object): FastGet | undefined => {
  const get: unknown = Reflect.get(store, slot)
  return isFastGet(get) ? get : undefined
}

const isFastGet = (u: unknown): u is FastGet => typeof u === "function"
