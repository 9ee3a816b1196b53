/**
 * The Redis client of the stores: one `ioredis` connection (commands issued in the same tick leave
 * in one write, its socket corked until then: one network round trip), bounded operations mapped to `StoreError`, store health
 * metrics, and a subscriber connection (made on first use) for pub/sub wake-ups.
 *
 * @internal
 */
import type { StoreError } from "@modelgate/core/Errors"
import { StoreError as StoreErrorClass } from "@modelgate/core/Errors"
import * as StoreHealth from "@modelgate/core/StoreHealth"
import type { Scope } from "effect"
import { Clock, Duration, Effect, Redacted } from "effect"
import { Redis as IORedis } from "ioredis"
import type { Script } from "./script.js"
import { makeEncoder, ScriptCall, type ScriptHandlers } from "./scriptCall.js"

/** @internal */
export type StoreName = StoreError["store"]

/** Marks a reply that is not what the script returns (never expected from a sound server). @internal */
export const bad: unique symbol = Symbol("bad")

/** @internal */
export const storeError = (store: StoreName, operation: string, detail: string) =>
  new StoreErrorClass({ store, operation, detail })

/** Timeouts are real time, also under a `TestClock`: a network round trip does not wait for it. @internal */
export const realClock = Clock.make()

/** @internal */
export interface ClientSettings {
  readonly url: string
  readonly password: Redacted.Redacted | undefined
  readonly connectTimeoutMs: number
  readonly commandTimeoutMs: number
}

/** @internal */
export interface Client {
  readonly commandTimeoutMs: number
  /** One operation: `effect` bounded by the command timeout, failures mapped to `StoreError`. */
  readonly bounded: <A>(
    store: StoreName,
    operation: string,
    effect: Effect.Effect<A, StoreError>
  ) => Effect.Effect<A, StoreError>
  /** One command, its reply decoded (`bad` fails). */
  readonly command: <A>(
    store: StoreName,
    operation: string,
    run: (redis: IORedis) => Promise<unknown>,
    decode: (reply: unknown) => A | typeof bad
  ) => Effect.Effect<A, StoreError>
  /** One script (`EVALSHA`, then `EVAL` if the server does not know it yet). */
  readonly script: <A>(
    store: StoreName,
    operation: string,
    script: Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string>,
    decode: (reply: unknown) => A | typeof bad,
    /** Milliseconds the caller can still wait, when less than the command timeout. */
    timeoutMs?: number
  ) => Effect.Effect<A, StoreError>
  /** Sends a script without waiting for its reply (a lost reply is covered by a lease or a TTL). */
  readonly send: (script: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string>) => void
  /**
   * Calls `onMessage` for every message on `channel` (a subscriber connection of its own);
   * `subscribed` each time the subscription is (re)established, `lost` when the connection drops
   * (messages may have been missed until the next `subscribed`).
   */
  readonly subscribe: (
    channel: string,
    onMessage: (message: string) => void,
    events?: { readonly subscribed?: () => void; readonly lost?: () => void }
  ) => void
  /** The store's health, as its operations report it. */
  readonly health: (store: StoreName) => StoreHealth.Tracker
  /** The connection, for tests and measurements (command counts). */
  readonly redis: IORedis
}

const isNoScript = (e: unknown) => e instanceof Error && e.message.startsWith("NOSCRIPT")

const noStrings: ReadonlyArray<string> = []

/** A failed operation: reported to the store's health, then failing with `StoreError`. */
const failedWith = (tracker: StoreHealth.Tracker, store: StoreName, operation: string, detail: string) =>
  Effect.zipRight(tracker.failed(operation), Effect.fail(storeError(store, operation, detail)))

const ignore = () => {}

/**
 * One operation in flight (the state its reply, its error, its timer and its interruption share: one
 * object rather than a closure each). Settles once; later events are ignored.
 */
class Pending<A> implements ScriptHandlers {
  settled = false
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  constructor(
    readonly redis: IORedis,
    readonly resume: (effect: Effect.Effect<A, StoreError>) => void,
    readonly tracker: StoreHealth.Tracker,
    readonly store: StoreName,
    readonly operation: string,
    readonly run: ((redis: IORedis) => Promise<unknown>) | Script,
    readonly keys: ReadonlyArray<string>,
    readonly args: ReadonlyArray<string>,
    readonly decode: (reply: unknown) => A | typeof bad
  ) {}
  reply(reply: unknown): void {
    if (this.settled) return
    this.settled = true
    clearTimeout(this.timer)
    const a = this.decode(reply)
    const tracker = this.tracker
    if (a === bad) this.resume(failedWith(tracker, this.store, this.operation, "unexpected reply"))
    else this.resume(tracker.healthy() ? Effect.succeed(a) : Effect.as(tracker.succeeded, a))
  }
  error(e: unknown): void {
    if (this.settled) return
    const run = this.run
    if (typeof run !== "function" && isNoScript(e)) {
      // the server does not hold the script (yet): once more with its text
      const keys = this.keys
      this.redis.eval(run.lua, keys.length, ...keys, ...this.args).then(this.replied, this.lost)
      return
    }
    this.end("unavailable")
  }
  /** Ends it with a failure (our own timer answers "timed out": the connection has no command timeout). */
  end(detail: string): void {
    if (this.settled) return
    this.settled = true
    clearTimeout(this.timer)
    this.resume(failedWith(this.tracker, this.store, this.operation, detail))
  }
  /** `reply`, `error` and a lost connection as callbacks (for a promise). */
  get replied() {
    return (reply: unknown) => this.reply(reply)
  }
  get failed() {
    return (e: unknown) => this.error(e)
  }
  get lost() {
    return () => this.end("unavailable")
  }
  /** Interrupted: nothing more is reported. */
  readonly cancel = () => {
    this.settled = true
    clearTimeout(this.timer)
  }
}

const timedOut = <A>(op: Pending<A>) => op.end("timed out")

/** @internal */
export const makeClient = (settings: ClientSettings): Effect.Effect<Client, never, Scope.Scope> =>
  Effect.gen(function* () {
    // long: one connection as a closure: the client, its timers and state shared by the commands it returns
    const commandTimeout = Duration.millis(settings.commandTimeoutMs)
    const connectionOptions = {
      ...(settings.password === undefined ? {} : { password: Redacted.value(settings.password) }),
      connectTimeout: settings.connectTimeoutMs,
      // Commands are bounded by our own timer (`raw`), which also covers a connection still being made.
      // Fail fast while disconnected, and never send a command twice (reserve and commit are
      // not idempotent across a resend).
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // Commands issued in the same tick go out in one write (see `batch`), without ioredis'
      // auto-pipelining (a pipeline, promises and closures per command and per tick).
      enableAutoPipelining: false,
      retryStrategy: (times: number) => Math.min(times * 50, 1000)
    }
    let subscriber: IORedis | undefined
    const handlers = new Map<string, Array<(message: string) => void>>()
    const subscribedHandlers = new Map<string, Array<() => void>>()
    const lostHandlers: Array<() => void> = []
    const subscribeAll = (sub: IORedis, channels: ReadonlyArray<string>) => {
      if (channels.length === 0) return
      sub.subscribe(...channels).then(
        () => {
          for (const ch of channels) for (const f of subscribedHandlers.get(ch) ?? []) f()
        },
        () => {}
      )
    }
    const redis = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const client = new IORedis(settings.url, connectionOptions)
        // Connection errors reach the callers as StoreError; the event itself carries the address.
        client.on("error", () => {})
        return client
      }),
      (client) =>
        Effect.sync(() => {
          client.disconnect()
          subscriber?.disconnect()
        })
    )
    // The first connection is waited for (at most the connect timeout), so that the first calls do
    // not fail while it is being made; afterwards an operation fails at once while disconnected.
    yield* Effect.async<void>((resume) => {
      if (redis.status === "ready") return resume(Effect.void)
      const done = () => {
        clearTimeout(timer)
        redis.off("ready", done)
        resume(Effect.void)
      }
      const timer = setTimeout(done, settings.connectTimeoutMs)
      redis.once("ready", done)
    })
    const encode = makeEncoder()
    /**
     * Commands issued in the same tick share one write (one round trip): the first one corks the
     * socket, which is uncorked once the tick's I/O callbacks have run (as ioredis' auto-pipelining
     * would, in one `setImmediate`); commands keep their order on the connection.
     */
    let corked = false
    const uncork = (socket: IORedis["stream"]) => {
      corked = false
      socket.uncork()
    }
    const batch = () => {
      if (corked) return
      corked = true
      const socket = redis.stream
      socket.cork()
      setImmediate(uncork, socket)
    }
    const trackers = new Map<StoreName, StoreHealth.Tracker>()
    const health = (store: StoreName) => {
      let t = trackers.get(store)
      if (t === undefined) {
        t = StoreHealth.tracker(store)
        trackers.set(store, t)
      }
      return t
    }
    const bounded = <A>(store: StoreName, operation: string, effect: Effect.Effect<A, StoreError>) =>
      effect.pipe(
        Effect.timeoutFail({ duration: commandTimeout, onTimeout: () => storeError(store, operation, "timed out") }),
        Effect.withClock(realClock)
      )
    /**
     * One operation: sent only while the connection is up (down, it fails at once: a command would
     * only wait in the offline queue), bounded by a plain timer (no fiber: the connection's own
     * `commandTimeout` does not cover a command queued while it is re-established), its reply
     * decoded (`bad` fails) and the store's health reported. The operation is a command (`run`) or
     * a script (`EVALSHA` as a `ScriptCall`, then `EVAL` once on `NOSCRIPT`, retried from the same
     * reply handlers); its state is one `Pending` object (no promise, and one closure: the canceller).
     */
    const raw = <A>(
      store: StoreName,
      operation: string,
      run: ((redis: IORedis) => Promise<unknown>) | Script,
      keys: ReadonlyArray<string>,
      args: ReadonlyArray<string>,
      decode: (reply: unknown) => A | typeof bad,
      timeoutMs?: number
    ): Effect.Effect<A, StoreError> =>
      Effect.async<A, StoreError>((resume) => {
        const tracker = health(store)
        if (redis.status !== "ready") {
          resume(failedWith(tracker, store, operation, "unavailable"))
          return
        }
        const waitMs =
          timeoutMs === undefined ? settings.commandTimeoutMs : Math.min(settings.commandTimeoutMs, timeoutMs)
        if (!(waitMs > 0)) {
          // the caller's time is already gone: nothing is sent
          resume(failedWith(tracker, store, operation, "timed out"))
          return
        }
        const op = new Pending(redis, resume, tracker, store, operation, run, keys, args, decode)
        op.timer = setTimeout(timedOut, waitMs, op)
        batch()
        if (typeof run === "function") run(redis).then(op.replied, op.failed)
        else redis.sendCommand(new ScriptCall(encode(run, keys, args), op))
        return Effect.sync(op.cancel)
      })
    const command: Client["command"] = (store, operation, run, decode) =>
      raw(store, operation, run, noStrings, noStrings, decode)
    const script: Client["script"] = raw
    // Scripts the server is known to hold since the connection was (re)established: a script sent
    // without waiting goes as `EVAL` until then, so that a `NOSCRIPT` retry can never reorder it
    // behind a later command of this connection.
    const known = new Set<string>()
    redis.on("ready", () => known.clear())
    const send: Client["send"] = (s, keys, args) => {
      // Down: nothing to send to (what it would have freed comes back by its lease or TTL).
      if (redis.status !== "ready") return
      batch()
      if (known.has(s.sha)) {
        const handlers: ScriptHandlers = {
          reply: ignore,
          error: (e) => {
            if (isNoScript(e)) redis.eval(s.lua, keys.length, ...keys, ...args).catch(ignore)
          }
        }
        redis.sendCommand(new ScriptCall(encode(s, keys, args), handlers))
      } else
        redis.eval(s.lua, keys.length, ...keys, ...args).then(
          () => known.add(s.sha),
          () => {}
        )
    }
    const subscribe: Client["subscribe"] = (channel, onMessage, events) => {
      if (subscriber === undefined) {
        const sub = new IORedis(settings.url, { ...connectionOptions, enableAutoPipelining: false })
        sub.on("error", () => {})
        // (Re)subscribes every channel once connected: a subscribe sent while down is lost.
        sub.on("ready", () => subscribeAll(sub, [...handlers.keys()]))
        sub.on("close", () => {
          for (const f of lostHandlers) f()
        })
        sub.on("message", (ch: string, message: string) => {
          for (const f of handlers.get(ch) ?? []) f(message)
        })
        subscriber = sub
      }
      if (events?.lost !== undefined) lostHandlers.push(events.lost)
      if (events?.subscribed !== undefined) {
        const list = subscribedHandlers.get(channel)
        if (list !== undefined) list.push(events.subscribed)
        else subscribedHandlers.set(channel, [events.subscribed])
      }
      const list = handlers.get(channel)
      if (list !== undefined) {
        list.push(onMessage)
        if (events?.subscribed !== undefined && subscriber.status === "ready") subscribeAll(subscriber, [channel])
      } else {
        handlers.set(channel, [onMessage])
        if (subscriber.status === "ready") subscribeAll(subscriber, [channel])
      }
    }
    return {
      commandTimeoutMs: settings.commandTimeoutMs,
      bounded,
      command,
      script,
      send,
      subscribe,
      health,
      redis
    }
  })

/** A reply of `n` integers, or `bad`. @internal */
export const ints = <N extends number>(reply: unknown, n: N): ReadonlyArray<number> | typeof bad =>
  Array.isArray(reply) && reply.length === n && reply.every((x): x is number => typeof x === "number") ? reply : bad

/** An integer as a script argument. @internal */
export const int = (n: number) => Math.trunc(n).toString()
