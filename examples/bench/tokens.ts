/**
 * §5 Token estimation: `TokenEstimator.countText` and `estimateInput` (the router's estimate) per
 * KB of input, on varied prose with numbers and identifiers (rotating texts, so the tokenizer's
 * cache of common chunks helps as it would in production, but never holds the whole input), with a
 * `TokenEstimator.Cache` as a gateway's router keeps one (texts up to 4 KB are memoized there).
 */
import * as TokenEstimator from "@modelgate/core/TokenEstimator"
import type { Message } from "@modelgate/core/ModelCommand"
import { type Profile, single, type Summary } from "./harness.js"

const vocabulary = (
  "the a to of and in is it for on that with as this was be at by customer invoice billing refund account " +
  "password error server timeout support ticket please help order shipping delivery address payment card " +
  "subscription plan upgrade downgrade cancel renew discount coupon tax receipt statement balance charge " +
  "week month year today yesterday tomorrow morning evening urgent issue problem question answer thanks"
).split(" ")

/** Deterministic varied text of `bytes` ASCII characters (seeded LCG). */
export const text = (bytes: number, seed: number): string => {
  let s = seed >>> 0
  const next = () => {
    s = (Math.imul(s, 1_103_515_245) + 12_345) >>> 0
    return s
  }
  const parts: Array<string> = []
  let length = 0
  while (length < bytes) {
    const r = next()
    let w: string
    if (r % 23 === 0) w = `#${(next() % 1_000_000).toString().padStart(6, "0")}`
    else if (r % 29 === 0) w = `${(next() % 10_000) / 100}`
    else if (r % 31 === 0) w = `INV-${next().toString(36).slice(0, 6).toUpperCase()}`
    else w = vocabulary[r % vocabulary.length]!
    const sep = r % 11 === 0 ? ". " : r % 13 === 0 ? ", " : r % 97 === 0 ? "\n" : " "
    parts.push(w, sep)
    length += w.length + sep.length
  }
  return parts.join("").slice(0, bytes)
}

export interface TokenPoint {
  readonly kb: number
  readonly countText: Summary
  readonly estimateInput: Summary
  /** µs per KB at this size, from the median. */
  readonly countTextUsPerKb: number
  readonly estimateInputUsPerKb: number
  readonly tokensPerKb: number
}

export interface TokenResults {
  readonly tokenizer: string
  readonly points: ReadonlyArray<TokenPoint>
}

export const run = async (profile: Profile): Promise<TokenResults> => {
  const points: Array<TokenPoint> = []
  for (const kb of [1, 10, 100]) {
    const pool = Array.from({ length: 32 }, (_, i) => text(kb * 1024, 7 + i * 7919))
    const messages: Array<ReadonlyArray<Message>> = pool.map((t) => [
      { _tag: "system", content: t.slice(0, 256) },
      { _tag: "user", content: t.slice(256) }
    ])
    const cache = TokenEstimator.makeCache()
    let i = 0
    const countText = await single(profile, () => TokenEstimator.countText(pool[i++ % pool.length]!, cache))
    let j = 0
    const estimate = await single(profile, () =>
      TokenEstimator.estimateInput({ messages: messages[j++ % messages.length]! }, cache)
    )
    points.push({
      kb,
      countText,
      estimateInput: estimate,
      countTextUsPerKb: countText.p50 / kb,
      estimateInputUsPerKb: estimate.p50 / kb,
      tokensPerKb: TokenEstimator.countText(pool[0]!) / kb
    })
  }
  return { tokenizer: "gpt-tokenizer 3.4.0 (o200k_base)", points }
}
