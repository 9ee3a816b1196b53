/**
 * One `EVALSHA` as an `ioredis` command that is written and answered without the generic command's
 * per-call work: its RESP text is built in one pass (the keys' part cached per keys array), and its
 * reply goes straight to the caller's handlers from ioredis' reply handler (no promise to settle, no
 * microtask, no argument copy). ioredis still owns the connection: it queues the command in its
 * reply order, and fails it (`reject`) when the connection closes.
 *
 * @internal
 */
import { Command } from "ioredis"
import type { Script } from "./script.js"

/** Where a call's answer goes: `reply` (decoded to text) or `error` (a Redis error or a lost connection). @internal */
export interface ScriptHandlers {
  readonly reply: (reply: unknown) => void
  readonly error: (e: unknown) => void
}

const noArgs: Array<string> = []

const utf8 = { replyEncoding: "utf8" } as const

/** A RESP bulk string. */
const bulk = (s: string) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`

/**
 * The RESP encoder of one client's scripts: the keys' part of a call (its key count and keys) is
 * cached per keys array (the stores build each account's and pool's keys once).
 *
 * @internal
 */
export const makeEncoder = () => {
  const keysParts = new WeakMap<ReadonlyArray<string>, string>()
  const keysPart = (keys: ReadonlyArray<string>): string => {
    let part = keysParts.get(keys)
    if (part === undefined) {
      part = bulk(String(keys.length))
      for (const k of keys) part += bulk(k)
      keysParts.set(keys, part)
    }
    return part
  }
  // One array reused by every call, joined at once (no chain of intermediate strings per argument).
  // It is never truncated (that would drop its storage): slots past a call's parts are blanked.
  const parts: Array<string> = []
  let used = 0
  /** `EVALSHA sha numkeys keys… args…` in RESP. */
  return (script: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string>): string => {
    parts[0] = "*"
    parts[1] = String(3 + keys.length + args.length)
    parts[2] = "\r\n$7\r\nevalsha\r\n$40\r\n"
    parts[3] = script.sha
    parts[4] = "\r\n"
    parts[5] = keysPart(keys)
    let i = 6
    for (const a of args) {
      parts[i++] = "$"
      parts[i++] = String(Buffer.byteLength(a))
      parts[i++] = "\r\n"
      parts[i++] = a
      parts[i++] = "\r\n"
    }
    for (let j = i; j < used; j++) parts[j] = ""
    used = i
    return parts.join("")
  }
}

/**
 * An `EVALSHA` whose RESP text is given (`wire`) and whose answer goes to `handlers`.
 *
 * @internal
 */
export class ScriptCall extends Command {
  private readonly wire: string
  private readonly handlers: ScriptHandlers
  constructor(wire: string, handlers: ScriptHandlers) {
    super("evalsha", noArgs, utf8)
    this.wire = wire
    this.handlers = handlers
    // ioredis answers a command by calling these on it (`command.resolve(reply)`): the prototype's
    // methods, shared by every call (the promise the base class made is never settled or awaited).
    this.resolve = ScriptCall.prototype.answer
    this.reject = ScriptCall.prototype.fail
  }
  override toWritable(_socket: object): string {
    return this.wire
  }
  private answer(this: ScriptCall, reply: unknown): void {
    this.isResolved = true
    let decoded: unknown
    try {
      decoded = decodeReply(reply)
    } catch (e) {
      this.handlers.error(e)
      return
    }
    this.handlers.reply(decoded)
  }
  private fail(this: ScriptCall, e: Error): void {
    this.handlers.error(e)
  }
}

/** A reply's bulk strings as text (what `replyEncoding: "utf8"` gives), nested arrays included. */
const decodeReply = (reply: unknown): unknown => {
  if (reply instanceof Buffer) return reply.toString()
  if (!Array.isArray(reply)) return reply
  const out: Array<unknown> = new Array(reply.length)
  for (let i = 0; i < reply.length; i++) out[i] = decodeReply(reply[i])
  return out
}
