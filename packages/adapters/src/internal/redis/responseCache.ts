/**
 * `ResponseCacheStore` on Redis: one string per key (`<prefix>cache:<digest>`), the entry encoded
 * with its Schema (`ResponseCacheStore.EntryFromJson`), expiring by Redis itself (`SET … PX`). A
 * read is one command (`GET`, or `MGET` with the epoch key; one round trip); a write is one `SET`. Both fail with `StoreError` (`cache`)
 * when Redis cannot answer within the command timeout: the cache then fails open.
 *
 * @internal
 */
import * as ResponseCacheStore from "@modelgate/core/ResponseCacheStore"
import { Effect, Either, Schema } from "effect"
import type { Client } from "./client.js"
import { bad } from "./client.js"
import { afterObserving, type Epoch } from "./epoch.js"

const decodeEntry = Schema.decodeUnknownEither(ResponseCacheStore.EntryFromJson)
const encodeEntry = Schema.encodeSync(ResponseCacheStore.EntryFromJson)

/**
 * With an `epoch` (the stores over one client), a read is one `MGET` of the entry and the epoch key:
 * the data-loss check rides it (same command, same round trip).
 *
 * @internal
 */
export const makeResponseCacheStore = (client: Client, prefix: string, epoch?: Epoch): ResponseCacheStore.Service => {
  const keyOf = (key: string) => `${prefix}cache:${key}`
  const entryOf = (reply: unknown): ResponseCacheStore.Entry | undefined | typeof bad => {
    if (reply === null) return undefined
    if (typeof reply !== "string") return bad
    const entry = decodeEntry(reply)
    return Either.isRight(entry) ? entry.right : bad
  }
  const get: ResponseCacheStore.Service["get"] =
    epoch === undefined
      ? (key) => client.command("cache", "get", (r) => r.get(keyOf(key)), entryOf)
      : (key) =>
          Effect.flatMap(
            client.command(
              "cache",
              "get",
              (r) => r.mget(keyOf(key), epoch.key),
              (reply) => {
                if (!Array.isArray(reply) || reply.length !== 2) return bad
                const [value, seen]: Array<unknown> = reply
                const entry = entryOf(value)
                return entry === bad || (seen !== null && typeof seen !== "string") ? bad : { entry, seen }
              }
            ),
            ({ entry, seen }) => afterObserving(epoch, seen, () => entry)
          )
  return ResponseCacheStore.ResponseCacheStore.of({
    get,
    set: (key, entry, ttlMs) =>
      client.command(
        "cache",
        "set",
        (r) => r.set(keyOf(key), encodeEntry(entry), "PX", Math.max(1, Math.ceil(ttlMs))),
        (reply) => (reply === "OK" ? undefined : bad)
      )
  })
}
