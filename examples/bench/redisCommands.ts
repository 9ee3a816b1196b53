/**
 * The commands of one `ioredis` connection, attributed to whoever issued them: the measured path
 * (effects run through `measured`, and every fiber they fork: a `FiberRef` they inherit) or the
 * background (the stores' own work — a breaker mirror's resync after a (re)subscription, an idle
 * epoch check — and ioredis' own commands). Counts are exact, not sampled: every command is
 * counted by name when it is issued, and a round trip is a write of the connection's socket that
 * carries at least one command of the measured path (commands issued in one tick
 * leave in one write). Commands sent as `Command` objects (`sendCommand`, as the stores send
 * their scripts) are counted too.
 *
 * A command issued outside any fiber (in a promise callback, such as the `EVAL` retry after a
 * `NOSCRIPT` reply) counts as background: measure after a warm-up that has loaded the scripts.
 */
import { Effect, Fiber, FiberRef, Option } from "effect"
import type { Redis } from "ioredis"

/** Commands by name, and the writes that carried them. */
export interface CommandCount {
  /** Commands issued by the measured path, by name (lower case). */
  readonly measured: ReadonlyMap<string, number>
  /** Commands issued by anything else, by name. */
  readonly background: ReadonlyMap<string, number>
  /** Writes of the socket that carried at least one measured command. */
  readonly roundTrips: number
  /** Every write of the socket. */
  readonly writes: number
}

/** A counter attached to one connection. */
export interface CommandCounter {
  /** `effect` with its commands (and those of every fiber it forks) counted as measured. */
  readonly measured: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The counts since the counter was attached (or last `reset`). */
  readonly count: () => CommandCount
  readonly reset: () => void
  /** Detaches the counter: the connection issues and writes as before. */
  readonly detach: () => void
}

/** Sum of a count's values. */
export const total = (counts: ReadonlyMap<string, number>): number => {
  let n = 0
  for (const v of counts.values()) n += v
  return n
}

/** `name n, …` (for a log line). */
export const listCounts = (counts: ReadonlyMap<string, number>): string =>
  counts.size === 0 ? "none" : [...counts].map(([name, n]) => `${name} ${n}`).join(", ")

const inMeasured = FiberRef.unsafeMake(false)

const issuedByMeasured = () => {
  const fiber = Fiber.getCurrentFiber()
  return Option.isSome(fiber) && fiber.value.getFiberRef(inMeasured)
}

const bump = (counts: Map<string, number>, name: string) => counts.set(name, (counts.get(name) ?? 0) + 1)

/**
 * Attaches a counter to `connection` (its command methods and its socket's `write`; measurement
 * only: the originals do the work). The connection must be connected (its socket is the one
 * counted).
 */
export const countCommands = (connection: Redis): CommandCounter => {
  const socket = connection.stream
  const write: unknown = Reflect.get(socket, "write")
  if (typeof write !== "function") throw new Error("countCommands: the connection has no socket")
  const measured = new Map<string, number>()
  const background = new Map<string, number>()
  let roundTrips = 0
  let writes = 0
  // a measured command was issued since the last write: the next write carries it
  let pending = false
  // inside a counted command method (its own `sendCommand` is not counted again)
  let inMethod = 0
  const issue = (command: string) => {
    if (issuedByMeasured()) {
      bump(measured, command)
      pending = true
    } else bump(background, command)
  }
  const names = [...connection.getBuiltinCommands(), "call"]
  for (const name of names) {
    const original: unknown = Reflect.get(connection, name)
    if (typeof original !== "function") continue
    Object.defineProperty(connection, name, {
      configurable: true,
      writable: true,
      value: (...args: Array<unknown>): unknown => {
        issue(name === "call" ? String(args[0]).toLowerCase() : name)
        inMethod++
        try {
          return Reflect.apply(original, connection, args)
        } finally {
          inMethod--
        }
      }
    })
  }
  // Command objects sent directly (as the stores send their scripts)
  const sendCommand: unknown = Reflect.get(connection, "sendCommand")
  if (typeof sendCommand !== "function") throw new Error("countCommands: the connection has no sendCommand")
  Object.defineProperty(connection, "sendCommand", {
    configurable: true,
    writable: true,
    value: (...args: Array<unknown>): unknown => {
      const command: unknown = args[0]
      // (a pipeline's own send carries its stream: its commands were counted by their method)
      const direct = inMethod === 0 && args[1] === undefined
      if (direct && typeof command === "object" && command !== null && "name" in command) {
        issue(String(command.name).toLowerCase())
      }
      return Reflect.apply(sendCommand, connection, args)
    }
  })
  Object.defineProperty(socket, "write", {
    configurable: true,
    writable: true,
    value: (...args: Array<unknown>): unknown => {
      writes++
      if (pending) {
        roundTrips++
        pending = false
      }
      return Reflect.apply(write, socket, args)
    }
  })
  return {
    measured: (effect) => Effect.locally(effect, inMeasured, true),
    count: () => ({ measured: new Map(measured), background: new Map(background), roundTrips, writes }),
    reset: () => {
      measured.clear()
      background.clear()
      roundTrips = 0
      writes = 0
      pending = false
    },
    detach: () => {
      for (const name of names) Reflect.deleteProperty(connection, name)
      Reflect.deleteProperty(connection, "sendCommand")
      Reflect.deleteProperty(socket, "write")
    }
  }
}
