/**
 * Prompt-prefix affinity (`Workflow.prefixAffinity`): the keys of a command's prompt prefix, and
 * the router's memory of which target served a prefix recently.
 *
 * The prompt is read in the order providers cache it (tool definitions, then the messages) as one
 * stream of characters, cut into blocks of `blockCharacters`. A key is a hash of the stream up to a
 * block boundary, salted with the workflow and the tenant, taken at 1, 2, 4 … 64 blocks. Two
 * commands that share their first `k` blocks (the same system prompt and document, another
 * question) share every key up to the largest checkpoint within `k` blocks: the longest key that
 * matches names the target whose prompt cache holds the longest shared prefix. Keys carry no text
 * (two 32-bit hashes), and a tenant's keys never match another tenant's.
 */
import type { ContentPart, ModelCommand } from "../../ModelCommand.js"
import type { TargetRef } from "../../ModelTarget.js"
import type { RouterState } from "./state.js"

/** Block counts at which a key is taken; the last bounds the characters hashed. */
const checkpoints: ReadonlyArray<number> = [1, 2, 4, 8, 16, 32, 64]

/** Blocks read at most (the last checkpoint). */
const maxBlocks = 64

/**
 * Most prefix keys a gateway's router remembers (least recently used forgotten first): seven per
 * served prompt at most.
 */
export const maxPrefixKeys = 20_000

/** What a decision remembers for the target that answers: its prefix keys and for how long. */
export interface PrefixMemo {
  readonly keys: ReadonlyArray<string>
  readonly ttlMs: number
}

/** Two running 32-bit hashes of a character stream, cut into keys at the checkpoints. */
class PrefixHasher {
  private h1 = 0x811c9dc5
  private h2 = 0x2545f491
  private fed = 0
  private next = 0
  /** Characters fed when the next key is taken. */
  private boundary: number
  private readonly limit: number
  readonly keys: Array<string> = []
  constructor(private readonly blockCharacters: number) {
    this.boundary = blockCharacters
    this.limit = blockCharacters * maxBlocks
  }
  get done(): boolean {
    return this.fed >= this.limit
  }
  /** Mixes `text` in without counting it towards the blocks (the workflow and tenant). */
  salt(text: string): void {
    this.mix(text, 0, text.length)
  }
  feed(text: string): void {
    let at = 0
    while (at < text.length && !this.done) {
      const end = Math.min(text.length, at + (this.boundary - this.fed))
      this.mix(text, at, end)
      this.fed += end - at
      at = end
      if (this.fed === this.boundary) this.cut()
    }
  }
  private mix(text: string, from: number, to: number): void {
    let h1 = this.h1
    let h2 = this.h2
    for (let i = from; i < to; i++) {
      const c = text.charCodeAt(i)
      h1 = Math.imul(h1 ^ c, 0x01000193)
      h2 = Math.imul(h2 ^ c, 0x5bd1e995)
    }
    this.h1 = h1
    this.h2 = h2 ^ (h2 >>> 15)
  }
  /** At a block boundary: a key when it is a checkpoint; then the next boundary. */
  private cut(): void {
    const blocks = this.fed / this.blockCharacters
    if (blocks === checkpoints[this.next]) {
      this.keys.push(`${blocks}:${(this.h1 >>> 0).toString(36)}.${(this.h2 >>> 0).toString(36)}`)
      this.next++
    }
    this.boundary += this.blockCharacters
  }
}

/**
 * The prefix keys of `command` on `workflow` for `tenant`, shortest first (none for a prompt
 * shorter than one block). Reads at most 64 blocks of the prompt.
 */
export const prefixKeys = (
  command: ModelCommand,
  workflow: string,
  tenant: string,
  blockCharacters: number
): ReadonlyArray<string> => {
  const hasher = new PrefixHasher(blockCharacters)
  hasher.salt(`${workflow}\u0000${tenant}\u0000`)
  for (const tool of command.tools ?? []) {
    if (hasher.done) break
    hasher.feed(`\u0001tool\u0000${tool.name}\u0000${tool.description}\u0000${JSON.stringify(tool.parameters)}`)
  }
  for (const m of command.messages) {
    if (hasher.done) break
    hasher.feed(`\u0001${m._tag}\u0000`)
    switch (m._tag) {
      case "system":
      case "tool":
        hasher.feed(m.content)
        break
      case "assistant":
        hasher.feed(m.content ?? "")
        for (const call of m.toolCalls ?? []) hasher.feed(`\u0002${call.name}\u0000${call.arguments}`)
        break
      case "user":
        if (typeof m.content === "string") hasher.feed(m.content)
        else for (const part of m.content) hasher.feed(partText(part))
        break
    }
  }
  return hasher.keys
}

/** What of a content part the prefix reads: its text, or what identifies its media. */
const partText = (part: ContentPart): string => {
  switch (part._tag) {
    case "text":
      return part.text
    case "image":
      return `\u0002image\u0000${part.url}`
    case "audio":
      return `\u0002audio\u0000${part.format}\u0000${part.data}`
    case "file":
      return `\u0002file\u0000${part.mediaType}\u0000${part.data}`
  }
}

/** The target that served the longest of `keys` within its time (`now` in ms), if any. */
export const prefixTarget = (state: RouterState, keys: ReadonlyArray<string>, now: number): TargetRef | undefined => {
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i]
    const seen = key === undefined ? undefined : state.prefixes.get(key)
    if (seen !== undefined && seen.until > now) return seen.target
  }
  return undefined
}

/** Remembers that `target` served `keys` until `until` (ms; LRU, at most {@link maxPrefixKeys} keys). */
export const rememberPrefix = (
  state: RouterState,
  keys: ReadonlyArray<string>,
  target: TargetRef,
  until: number
): void => {
  const lru = state.prefixes
  for (const key of keys) {
    lru.delete(key)
    lru.set(key, { target, until })
  }
  while (lru.size > maxPrefixKeys) {
    const oldest = lru.keys().next()
    if (oldest.done === true) break
    lru.delete(oldest.value)
  }
}
