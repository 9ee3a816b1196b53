/**
 * `BreakerStore` on Redis, mirrored in each process (see `makeBreakerStore`).
 *
 * @internal
 */
import * as BreakerStore from "@modelgate/core/BreakerStore"
import type { StoreError } from "@modelgate/core/Errors"
import { Effect, Option, Schema } from "effect"
import * as BreakerScripts from "./breakerScripts.js"
import { bad, type Client, storeError } from "./client.js"
import { capabilitySlot } from "./joint.js"

/** The stored value: the state and a version bumped by every write (the compare-and-set's witness). */
const StoredBreaker = Schema.parseJson(Schema.Struct({ v: Schema.Int, s: BreakerStore.BreakerState }))
const decodeStoredBreaker = Schema.decodeUnknownOption(StoredBreaker)

/** Compare-and-set attempts before `modify` gives up (each one lost to a concurrent writer). */
const maxCasAttempts = 64

/** What this process knows of one breaker: the stored value, its state, the change that wrote it. */
interface Mirrored {
  readonly seq: number
  readonly raw: string
  readonly state: BreakerStore.BreakerState | undefined
}

/**
 * Breakers shared through Redis, mirrored in this process: every change is a compare-and-set
 * script that also publishes the change, and each process applies the changes it hears to its
 * mirror. While the mirror is in sync (subscribed, and loaded once after each (re)subscription),
 * `get` answers from it (no round trip) and `modify` starts its compare-and-set from it (one round
 * trip when nobody changed the breaker meanwhile). While Redis cannot be reached, the breakers fall
 * back to this process's mirror: `get` answers the last state seen, `modify` changes it locally;
 * once Redis is back, the shared state replaces the local one.
 */
/** @internal */
export const makeBreakerStore = (client: Client, prefix: string): BreakerStore.Service => {
  const key = (route: string) => `${prefix}breaker:${route}`
  const keyPrefix = `${prefix}breaker:`
  const routesKey = `${prefix}breakers`
  const seqKey = `${prefix}breaker-seq`
  const channel = `${prefix}breaker-changes`
  const mirror = new Map<string, Mirrored>()
  let synced = false
  const parse = (raw: string): Option.Option<BreakerStore.BreakerState | undefined> => {
    if (raw === "") return Option.some(undefined)
    const stored = decodeStoredBreaker(raw)
    return Option.isSome(stored) ? Option.some(stored.value.s) : Option.none()
  }
  /** A change heard or made: applied unless the mirror already has a later one. */
  const apply = (route: string, seq: number, raw: string) => {
    const current = mirror.get(route)
    if (current !== undefined && current.seq >= seq) return
    const state = parse(raw)
    if (Option.isSome(state)) mirror.set(route, { seq, raw, state: state.value })
  }
  const resync = client.script(
    "breaker",
    "sync",
    BreakerScripts.breakerAll,
    [routesKey, seqKey],
    [keyPrefix],
    (reply) => (Array.isArray(reply) && reply.length % 2 === 1 && typeof reply[0] === "number" ? reply : bad)
  )
  client.subscribe(
    channel,
    (message) => {
      const a = message.indexOf("\n")
      const b = message.indexOf("\n", a + 1)
      if (a < 0 || b < 0) return
      apply(message.slice(a + 1, b), Number(message.slice(0, a)), message.slice(b + 1))
    },
    {
      subscribed: () => {
        Effect.runFork(
          Effect.match(resync, {
            onFailure: () => {},
            onSuccess: (reply) => {
              const seq = Number(reply[0])
              const seen = new Set<string>()
              for (let i = 1; i + 1 < reply.length; i += 2) {
                const route = String(reply[i])
                seen.add(route)
                const current = mirror.get(route)
                if (current !== undefined && current.seq > seq) continue
                const raw = String(reply[i + 1])
                const state = parse(raw)
                if (Option.isSome(state)) mirror.set(route, { seq, raw, state: state.value })
              }
              for (const [route, m] of mirror) if (!seen.has(route) && m.seq <= seq) mirror.delete(route)
              synced = true
            }
          })
        )
      },
      lost: () => {
        synced = false
      }
    }
  )
  /** Redis could not answer: the operation falls back to this process's mirror. */
  const unreachable = (e: StoreError) => e.detail === "unavailable" || e.detail === "timed out"
  const local = (route: string) => mirror.get(route)
  /** The stored value of `route` read from Redis (and kept in the mirror). */
  const read = (operation: string, route: string): Effect.Effect<Mirrored, StoreError> =>
    client.command(
      "breaker",
      operation,
      (r) => r.get(key(route)),
      (reply): Mirrored | typeof bad => {
        const raw = reply === null ? "" : typeof reply === "string" ? reply : undefined
        if (raw === undefined) return bad
        const state = parse(raw)
        if (Option.isNone(state)) return bad
        const seq = mirror.get(route)?.seq ?? 0
        const m = { seq, raw, state: state.value }
        if (!synced) mirror.set(route, m)
        return m
      }
    )
  const get = (route: string): Effect.Effect<BreakerStore.BreakerState | undefined, StoreError> =>
    Effect.suspend(() =>
      synced
        ? Effect.succeed(mirror.get(route)?.state)
        : Effect.catchAll(
            Effect.map(read("get", route), (m) => m.state),
            (e) => (unreachable(e) ? Effect.succeed(local(route)?.state) : Effect.fail(e))
          )
    )
  const modify = <A>(
    route: string,
    f: (current: BreakerStore.BreakerState | undefined) => readonly [A, BreakerStore.BreakerState | undefined]
  ): Effect.Effect<A, StoreError> => {
    const k = key(route)
    const attempt = (n: number, from: Mirrored | undefined): Effect.Effect<A, StoreError> =>
      Effect.flatMap(from !== undefined ? Effect.succeed(from) : read("modify", route), ({ raw, state }) => {
        const [a, next] = f(state)
        // Unchanged: nothing to write (the read is the linearization point).
        if (next === state) return Effect.succeed(a)
        const version = raw === "" ? 0 : Option.match(decodeStoredBreaker(raw), { onNone: () => 0, onSome: (x) => x.v })
        const value = next === undefined ? "" : JSON.stringify({ v: version + 1, s: next })
        return Effect.flatMap(
          client.script(
            "breaker",
            "modify",
            BreakerScripts.breakerCas,
            [k, routesKey, seqKey],
            [raw, value, channel, route],
            (reply) => (typeof reply === "number" ? reply : bad)
          ),
          (seq) => {
            if (seq > 0) {
              apply(route, seq, value)
              return Effect.succeed(a)
            }
            return n + 1 >= maxCasAttempts
              ? Effect.fail(storeError("breaker", "modify", "contention"))
              : attempt(n + 1, undefined)
          }
        )
      })
    const fromMirror = Effect.suspend(() =>
      attempt(0, synced ? (mirror.get(route) ?? { seq: 0, raw: "", state: undefined }) : undefined)
    )
    return Effect.catchAll(client.bounded("breaker", "modify", fromMirror), (e) => {
      if (!unreachable(e)) return Effect.fail(e)
      // Redis is unreachable: the breaker changes in this process only.
      return Effect.sync(() => {
        const current = local(route)
        const [a, next] = f(current?.state)
        mirror.set(route, {
          seq: current?.seq ?? 0,
          raw: next === undefined ? "" : JSON.stringify({ v: 0, s: next }),
          state: next
        })
        return a
      })
    })
  }
  return offerMirror(BreakerStore.BreakerStore.of({ get, modify }), {
    _tag: "BreakerStore",
    ready: () => synced,
    get: (route) => mirror.get(route)?.state
  })
}

/**
 * Core's `Health` reads the mirror at once while it is in sync (what `get` answers then, without an
 * Effect step); out of sync, it asks `get`.
 */
const offerMirror = (store: BreakerStore.Service, readAtOnce: BreakerReadAtOnce): BreakerStore.Service =>
  Object.defineProperty(store, capabilitySlot, { value: readAtOnce, enumerable: false })

/** What core's `Health` reads under {@link capabilitySlot} of a breaker store (`internal/fastPath.ts` there). */
interface BreakerReadAtOnce {
  readonly _tag: "BreakerStore"
  readonly ready: () => boolean
  readonly get: (route: string) => BreakerStore.BreakerState | undefined
}
