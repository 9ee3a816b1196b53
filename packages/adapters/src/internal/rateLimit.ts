/**
 * Rate-limit headroom from response headers: OpenAI-style `x-ratelimit-*` (also sent by many
 * OpenAI-compatible servers; resets as Go durations) and Anthropic's `anthropic-ratelimit-*`
 * (resets as RFC 3339 instants). Gemini reports none. Resets become instants (`resetAt`, epoch ms)
 * of the clock read when the headers arrived (`reportedAt`).
 *
 * @internal
 */
import type { Headers } from "@effect/platform"
import type { RateLimitHeadroom } from "@modelgate/core/ProviderAdapter"
import { parseGoDuration, parseResetInstant } from "./retryHints.js"

const count = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  const n = Number(value.trim())
  return Number.isFinite(n) && n >= 0 ? n : undefined
}

const shortest = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

const instant = (nowMs: number, afterMs: number | undefined) => (afterMs === undefined ? undefined : nowMs + afterMs)

/** One header family: the name of a limit's field, and how its reset reads (milliseconds from now). */
interface HeaderFamily {
  readonly name: (limit: "requests" | "tokens", field: "remaining" | "limit" | "reset") => string
  readonly resetMs: (value: string | undefined, nowMs: number) => number | undefined
}

/** OpenAI-style (resets as Go durations), then Anthropic's (resets as RFC 3339 instants). */
const families: ReadonlyArray<HeaderFamily> = [
  { name: (limit, field) => `x-ratelimit-${field}-${limit}`, resetMs: (value) => parseGoDuration(value) },
  { name: (limit, field) => `anthropic-ratelimit-${limit}-${field}`, resetMs: parseResetInstant }
]

const headroomOf = (headers: Headers.Headers, nowMs: number, family: HeaderFamily): RateLimitHeadroom | undefined => {
  const header = (limit: "requests" | "tokens", field: "remaining" | "limit" | "reset") =>
    headers[family.name(limit, field)]
  if (header("requests", "remaining") === undefined && header("tokens", "remaining") === undefined) return undefined
  return {
    remainingRequests: count(header("requests", "remaining")),
    limitRequests: count(header("requests", "limit")),
    remainingTokens: count(header("tokens", "remaining")),
    limitTokens: count(header("tokens", "limit")),
    resetAt: instant(
      nowMs,
      shortest(family.resetMs(header("requests", "reset"), nowMs), family.resetMs(header("tokens", "reset"), nowMs))
    ),
    reportedAt: nowMs
  }
}

/**
 * The headroom in `headers`, or `undefined` when the provider sent none.
 *
 * @internal
 */
export const rateLimitFromHeaders = (headers: Headers.Headers, nowMs: number): RateLimitHeadroom | undefined => {
  for (const family of families) {
    const headroom = headroomOf(headers, nowMs, family)
    if (headroom !== undefined) return headroom
  }
  return undefined
}
