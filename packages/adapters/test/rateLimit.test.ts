import { Headers } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { rateLimitFromHeaders } from "../src/internal/rateLimit.js"

describe("rate-limit headroom from headers", () => {
  const now = Date.parse("2026-11-29T12:00:00Z")

  it("OpenAI-style x-ratelimit-* headers, resets as Go durations (the sooner reset wins)", () => {
    expect(
      rateLimitFromHeaders(
        Headers.fromInput({
          "x-ratelimit-limit-requests": "500",
          "x-ratelimit-remaining-requests": "499",
          "x-ratelimit-limit-tokens": "30000",
          "x-ratelimit-remaining-tokens": "29000",
          "x-ratelimit-reset-requests": "120ms",
          "x-ratelimit-reset-tokens": "1.5s"
        }),
        now
      )
    ).toStrictEqual({
      remainingRequests: 499,
      limitRequests: 500,
      remainingTokens: 29000,
      limitTokens: 30000,
      resetAt: now + 120,
      reportedAt: now
    })
  })

  it("Anthropic's anthropic-ratelimit-* headers, resets as RFC 3339 instants", () => {
    expect(
      rateLimitFromHeaders(
        Headers.fromInput({
          "anthropic-ratelimit-requests-limit": "50",
          "anthropic-ratelimit-requests-remaining": "0",
          "anthropic-ratelimit-requests-reset": "2026-11-29T12:00:30Z",
          "anthropic-ratelimit-tokens-remaining": "oops"
        }),
        now
      )
    ).toStrictEqual({
      remainingRequests: 0,
      limitRequests: 50,
      remainingTokens: undefined,
      limitTokens: undefined,
      resetAt: now + 30_000,
      reportedAt: now
    })
  })

  it("no rate-limit headers: nothing reported", () => {
    expect(rateLimitFromHeaders(Headers.fromInput({ "content-type": "application/json" }), now)).toBeUndefined()
  })
})
