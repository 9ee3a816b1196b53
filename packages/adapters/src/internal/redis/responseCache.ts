/**
 * `ResponseCacheStore` on Redis: one string per key (`<prefix>cache:<digest>`), the entry encoded
 * with its Schema (`ResponseCacheStore.EntryFromJson`), expiring by Redis itself (`SET … PX`). A
 * read is one `GET` (one round trip); a write is one `SET`. Both fail with `StoreError` (`cache`)
 * when Redis cannot answer within the command timeout: the cache then fails open.
 *
 * @internal
 */
import * as ResponseCacheStore from "@modelgate/core/ResponseCacheStore"
import { Either, Schema } from "effect"
import type { Client } from "./client.js"
import { bad } from "./client.js"

const decodeEntry = Schema.decodeUnknownEither(ResponseCacheStore.EntryFromJson)
const encodeEntry = Schema.encodeSync(ResponseCacheStore.EntryFromJson)

/** @internal */
export const makeResponseCacheStore = (client: Client, prefix: string): ResponseCacheStore.Service => {
  const keyOf = (key: string) => `${prefix}cache:${key}`
  return ResponseCacheStore.ResponseCacheStore.of({
    get: (key) =>
      client.command(
        "cache",
        "get",
        (r) => r.get(keyOf(key)),
        (reply): ResponseCacheStore.Entry | undefined | typeof bad => {
          if (reply === null) return undefined
          if (typeof reply !== "string") return bad
          const entry = decodeEntry(reply)
          return Either.isRight(entry) ? entry.right : bad
        }
      ),
    set: (key, entry, ttlMs) =>
      client.command(
        "cache",
        "set",
        (r) => r.set(keyOf(key), encodeEntry(entry), "PX", Math.max(1, Math.ceil(ttlMs))),
        (reply) => (reply === "OK" ? undefined : bad)
      )
  })
}
