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

/**
 * The headroom in `headers`, or `undefined` when the provider sent none.
 *
 * @internal
 */
export const rateLimitFromHeaders = (headers: Headers.Headers, nowMs: number): RateLimitHeadroom | undefined => {
  if (
    headers["x-ratelimit-remaining-requests"] !== undefined ||
    headers["x-ratelimit-remaining-tokens"] !== undefined
  ) {
    return {
      remainingRequests: count(headers["x-ratelimit-remaining-requests"]),
      limitRequests: count(headers["x-ratelimit-limit-requests"]),
      remainingTokens: count(headers["x-ratelimit-remaining-tokens"]),
      limitTokens: count(headers["x-ratelimit-limit-tokens"]),
      resetAt: instant(
        nowMs,
        shortest(
          parseGoDuration(headers["x-ratelimit-reset-requests"]),
          parseGoDuration(headers["x-ratelimit-reset-tokens"])
        )
      ),
      reportedAt: nowMs
    }
  }
  if (
    headers["anthropic-ratelimit-requests-remaining"] !== undefined ||
    headers["anthropic-ratelimit-tokens-remaining"] !== undefined
  ) {
    return {
      remainingRequests: count(headers["anthropic-ratelimit-requests-remaining"]),
      limitRequests: count(headers["anthropic-ratelimit-requests-limit"]),
      remainingTokens: count(headers["anthropic-ratelimit-tokens-remaining"]),
      limitTokens: count(headers["anthropic-ratelimit-tokens-limit"]),
      resetAt: instant(
        nowMs,
        shortest(
          parseResetInstant(headers["anthropic-ratelimit-requests-reset"], nowMs),
          parseResetInstant(headers["anthropic-ratelimit-tokens-reset"], nowMs)
        )
      ),
      reportedAt: nowMs
    }
  }
  return undefined
}
