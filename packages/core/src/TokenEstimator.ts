/**
 * Input-token estimation with a real tokenizer (`gpt-tokenizer`, o200k_base), applied to everything
 * that is sent: messages, tool definitions and the output JSON Schema. Targets whose provider
 * tokenizer is not public scale this by their `tokenizerSafetyFactor` (in the router and engine).
 *
 * Why `gpt-tokenizer` rather than `js-tiktoken`: both are pure JS and give identical o200k counts,
 * but measured on Node 20 `gpt-tokenizer` counts ordinary text 4–13× faster (it counts without
 * building token arrays and caches merges), loads its ranks about 3× faster, and degrades far less
 * on long whitespace-free runs (4 KB of letters: 0.2 s against 12 s).
 *
 * Both tokenizers merge each pre-tokenized piece in time quadratic in its length, and a piece is a
 * whole run without whitespace (CJK prose, base64, minified code) or a whole run of whitespace:
 * 64 KB of spaces took 9 s. So runs longer than `maxPieceLength` are counted in slices, which
 * keeps counting linear and over-counts by at most about one token per slice. Special-token text
 * such as `<|endoftext|>` in user input is counted as ordinary text (by default the library throws
 * on it).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { countTokens, setMergeCacheSize } from "gpt-tokenizer"
import { withSliceYield } from "./internal/sliceYield.js"
import type { ContentPart, Message, ToolDefinition } from "./ModelCommand.js"
import { imageTokens, maxPieceLength, sliceCharacters, turnMilliseconds } from "./internal/tokenLimits.js"

/**
 * Entries of gpt-tokenizer's merge cache (its default is 100,000). The cache is an LRU `Map` whose
 * evictions delete its oldest key; filled by high-entropy text (base64) it made a following count
 * of 1 M characters of `"aaaa "` take 20 s here, against 0.23 s with 1,000 entries and 0.32 s with
 * none, while ordinary prose counts as fast (measured on this project's machines, Node 20). Set
 * once on gpt-tokenizer's shared o200k instance when this module loads.
 *
 * @since 0.2.0
 * @category Constants
 *
 * @internal
 */
export const mergeCacheEntries = 1_000
setMergeCacheSize(mergeCacheEntries)

/** Special tokens in user text are plain text to us; never an exception. */
const asPlainText = { disallowedSpecial: new Set<string>() }

/** Whether `c` is whitespace as the tokenizer's pre-split (and JavaScript's `\s`) sees it. */
const isSpace = (c: number): boolean =>
  c === 32 ||
  (c >= 9 && c <= 13) ||
  (c > 127 &&
    (c === 0xa0 ||
      c === 0x1680 ||
      (c >= 0x2000 && c <= 0x200a) ||
      c === 0x2028 ||
      c === 0x2029 ||
      c === 0x202f ||
      c === 0x205f ||
      c === 0x3000 ||
      c === 0xfeff))

const countRun = (run: string): number => {
  let total = 0
  for (let i = 0; i < run.length; ) {
    let end = Math.min(run.length, i + maxPieceLength)
    // never split a surrogate pair
    const last = run.charCodeAt(end - 1)
    if (end < run.length && last >= 0xd800 && last <= 0xdbff) end++
    total += countTokens(run.slice(i, end), asPlainText)
    i = end
  }
  return total
}

/** Tokens a chat format adds around each message (role markers). @internal */
const perMessageOverhead = 4

/** Bytes of audio per estimated token: ~32 tokens a second of 128 kbps audio (Gemini's rate; OpenAI's is lower). */
const audioBytesPerToken = 500
/** Bytes of a file per estimated token (a PDF's text and page images), and the least a file counts. */
const fileBytesPerToken = 16
const minimumFileTokens = 1_000

/**
 * Estimate for one part that is not text, from its size: an image `imageTokens`; audio one
 * token per 500 decoded bytes; a file one token per 16 decoded bytes, at least 1,000. Bounded by a
 * part's 20,000,000 base64 characters: at most 30,000 tokens for audio, 937,500 for a file.
 */
const mediaTokens = (part: Exclude<ContentPart, { readonly _tag: "text" }>): number => {
  if (part._tag === "image") return imageTokens
  const bytes = Math.floor((part.data.length * 3) / 4)
  return part._tag === "audio"
    ? Math.ceil(bytes / audioBytesPerToken)
    : Math.max(minimumFileTokens, Math.ceil(bytes / fileBytesPerToken))
}

/**
 * Memory that makes repeated counting cheap, owned by whoever counts (a gateway's router keeps one
 * for its lifetime, `makeCache`): the counts of texts seen recently (system prompts, tool
 * definitions and schemas repeat from call to call), at most `memoEntries` texts of at most
 * {@link memoMaxLength} characters each, so it holds a few MB at most and is emptied when full;
 * and the JSON length of each output schema object. Without one, every count runs the tokenizer.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Cache {
  readonly texts: Map<string, number>
  readonly schemaLengths: WeakMap<object, number>
}

/**
 * A fresh, empty {@link Cache}.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeCache = (): Cache => ({ texts: new Map(), schemaLengths: new WeakMap() })

/** @internal */
export const memoEntries = 1_024
/** @internal */
export const memoMaxLength = 4_096

/**
 * Tokens of one text (memoized in `cache`, when given, for texts of at most {@link memoMaxLength}
 * characters).
 *
 * @since 0.1.0
 * @category Utils
 */
export const countText = (text: string, cache?: Cache): number => {
  if (text.length === 0) return 0
  if (cache === undefined || text.length > memoMaxLength) return countUncached(text)
  const memo = cache.texts
  let n = memo.get(text)
  if (n === undefined) {
    n = countUncached(text)
    if (memo.size >= memoEntries) memo.clear()
    memo.set(text, n)
  }
  return n
}

const countUncached = (text: string): number => {
  if (text.length <= maxPieceLength) return countTokens(text, asPlainText)
  // Runs (of whitespace, or of anything else) longer than a piece are counted in slices. Scanned by
  // hand: a regular expression over a run of megabytes overflows the regexp engine's stack.
  let total = 0
  let last = 0
  let i = 0
  while (i < text.length) {
    const space = isSpace(text.charCodeAt(i))
    let j = i + 1
    while (j < text.length && isSpace(text.charCodeAt(j)) === space) j++
    if (j - i > maxPieceLength) {
      if (i > last) total += countTokens(text.slice(last, i), asPlainText)
      total += countRun(text.slice(i, j))
      last = j
    }
    i = j
  }
  if (last < text.length) total += countTokens(last === 0 ? text : text.slice(last), asPlainText)
  return total
}

/**
 * Estimated input tokens of a request, before any per-target safety factor.
 *
 * @since 0.1.0
 * @category Utils
 */
export const estimateInput = (
  input: {
    readonly messages: ReadonlyArray<Message>
    readonly tools?: ReadonlyArray<ToolDefinition> | undefined
    readonly outputJsonSchema?: Record<string, unknown> | undefined
  },
  cache?: Cache
): number => {
  let total = 3
  for (const m of input.messages) {
    total += perMessageOverhead
    switch (m._tag) {
      case "system":
      case "tool":
        total += countText(m.content, cache)
        break
      case "assistant":
        if (m.content) total += countText(m.content, cache)
        for (const call of m.toolCalls ?? []) total += countText(call.name, cache) + countText(call.arguments, cache)
        break
      case "user":
        if (typeof m.content === "string") total += countText(m.content, cache)
        else for (const p of m.content) total += p._tag === "text" ? countText(p.text, cache) : mediaTokens(p)
        break
    }
  }
  for (const tool of input.tools ?? []) {
    total += countText(
      JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }),
      cache
    )
  }
  if (input.outputJsonSchema) total += countText(JSON.stringify(input.outputJsonSchema), cache)
  return total
}

/**
 * An upper bound of {@link estimateInput} that reads lengths only, never the tokenizer: a token
 * covers at least one UTF-8 byte, and a UTF-16 code unit is at most three UTF-8 bytes. The gateway
 * uses it to skip counting when no limit needs a count and the input certainly fits every context
 * window.
 *
 * @since 0.2.0
 * @category Utils
 *
 * @internal
 */
export const upperBound = (input: Input, cache?: Cache): number => {
  const m = measure(input, cache)
  return m.fixed + 3 * m.characters
}

/**
 * Everything a request sends, as counting sees it.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Input {
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  readonly outputJsonSchema?: Record<string, unknown> | undefined
}

/**
 * Characters of text a request sends (message text, tool definitions and the output schema as
 * JSON): what the input-size limit is checked against, before anything is counted.
 *
 * @since 0.2.0
 * @category Utils
 *
 * @internal
 */
export const inputCharacters = (input: Input, cache?: Cache): number => measure(input, cache).characters

/** Lengths only: characters of text, and the tokens that do not depend on text (overheads, images). */
const measure = (input: Input, cache: Cache | undefined): { readonly characters: number; readonly fixed: number } => {
  let total = 3
  let chars = 0
  for (const m of input.messages) {
    total += perMessageOverhead
    switch (m._tag) {
      case "system":
      case "tool":
        chars += m.content.length
        break
      case "assistant":
        if (m.content) chars += m.content.length
        for (const call of m.toolCalls ?? []) chars += call.name.length + call.arguments.length
        break
      case "user":
        if (typeof m.content === "string") chars += m.content.length
        else
          for (const p of m.content)
            if (p._tag === "text") chars += p.text.length
            else total += mediaTokens(p)
        break
    }
  }
  for (const tool of input.tools ?? []) {
    chars += JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }).length
  }
  if (input.outputJsonSchema) chars += jsonLength(input.outputJsonSchema, cache)
  return { characters: chars, fixed: total }
}

/** Length of a (configuration-owned, immutable) JSON Schema's text, computed once per `cache`. */
const jsonLength = (schema: Record<string, unknown>, cache: Cache | undefined): number => {
  if (cache === undefined) return JSON.stringify(schema).length
  let n = cache.schemaLengths.get(schema)
  if (n === undefined) {
    n = JSON.stringify(schema).length
    cache.schemaLengths.set(schema, n)
  }
  return n
}

/** The texts `estimateInput` counts, and the tokens that do not depend on text. */
const textsOf = (input: Input): { readonly texts: Array<string>; readonly fixed: number } => {
  const texts: Array<string> = []
  let fixed = 3
  for (const m of input.messages) {
    fixed += perMessageOverhead
    switch (m._tag) {
      case "system":
      case "tool":
        texts.push(m.content)
        break
      case "assistant":
        if (m.content) texts.push(m.content)
        for (const call of m.toolCalls ?? []) texts.push(call.name, call.arguments)
        break
      case "user":
        if (typeof m.content === "string") texts.push(m.content)
        else
          for (const p of m.content)
            if (p._tag === "text") texts.push(p.text)
            else fixed += mediaTokens(p)
        break
    }
  }
  for (const tool of input.tools ?? []) {
    texts.push(JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }))
  }
  if (input.outputJsonSchema) texts.push(JSON.stringify(input.outputJsonSchema))
  return { texts, fixed }
}

/**
 * Where to cut `text` at or before `end`: before a whitespace character when there is one in the
 * last 256 characters (the tokenizer joins a space to the word after it, so the next slice starts
 * as the whole text's piece would: the count is the same), never inside a surrogate pair.
 */
const cutAt = (text: string, start: number, end: number): number => {
  if (end >= text.length) return text.length
  for (let i = end; i > Math.max(start + 1, end - maxPieceLength); i--) {
    const c = text.charCodeAt(i)
    if (c === 32 || c === 10 || c === 9 || c === 13) return i
  }
  const last = text.charCodeAt(end - 1)
  return last >= 0xd800 && last <= 0xdbff ? end + 1 : end
}

/**
 * {@link estimateInput} for inputs of any size without holding the event loop: inputs up to
 * `sliceCharacters` are counted at once; larger ones in slices of at most that many
 * characters (cut after whitespace where possible), giving the event loop a turn whenever
 * `turnMilliseconds` of counting went by (measured with `performance.now`). The yield is a
 * real event-loop turn, except under `TestClock`, where it is a turn of Effect's scheduler that
 * never waits for a timer, so virtual time cannot move while a count is under way. The slices do
 * not depend on timing, so neither does the count; a slice boundary inside a word can add a token,
 * so a sliced count may exceed `estimateInput`'s by at most one token per slice.
 *
 * @since 0.2.0
 * @category Utils
 */
export const estimateInputYielding = (input: Input, cache?: Cache): Effect.Effect<number> =>
  Effect.suspend(() => {
    if (measure(input, cache).characters <= sliceCharacters) return Effect.sync(() => estimateInput(input, cache))
    const { texts, fixed } = textsOf(input)
    return withSliceYield((yieldBetween) => {
      let total = fixed
      let t = 0
      let offset = 0
      const step: Effect.Effect<number> = Effect.suspend(() => {
        const turnStart = performance.now()
        while (t < texts.length && performance.now() - turnStart < turnMilliseconds) {
          const text = texts[t]!
          const end = cutAt(text, offset, Math.min(text.length, offset + sliceCharacters))
          // A whole (short) text through the memo; a slice of a long one never (it would keep the text).
          total += offset === 0 && end === text.length ? countText(text, cache) : countUncached(text.slice(offset, end))
          offset = end
          if (offset >= text.length) {
            t++
            offset = 0
          }
        }
        return t < texts.length ? Effect.zipRight(yieldBetween, step) : Effect.succeed(total)
      })
      return step
    })
  })

/**
 * {@link countText} for a text of any size without holding the event loop: up to
 * `sliceCharacters` at once, longer texts in slices yielding between them as
 * {@link estimateInputYielding} does (a slice boundary inside a word can add a token).
 *
 * @since 0.2.0
 * @category Utils
 *
 * @internal
 */
export const countTextYielding = (text: string, cache?: Cache): Effect.Effect<number> =>
  text.length <= sliceCharacters
    ? Effect.sync(() => countText(text, cache))
    : estimateInputYielding({ messages: [{ _tag: "system", content: text }] }, cache).pipe(
        // Only the text: not the per-request and per-message overheads `estimateInput` adds.
        Effect.map((n) => n - 3 - perMessageOverhead)
      )
