import { describe, expect, it } from "@effect/vitest"
import {
  parseGoDuration,
  parseProtoDuration,
  parseResetInstant,
  parseRetryAfter,
  parseRetryAfterMs,
  retryHintMs
} from "../src/internal/retryHints.js"

const now = Date.parse("2026-08-21T12:00:00Z")

describe("retry hints", () => {
  it("retry-after-ms is float milliseconds; 0 is a hint", () => {
    expect(parseRetryAfterMs("1500.5")).toBe(1501)
    expect(parseRetryAfterMs("0")).toBe(0)
    expect(parseRetryAfterMs(" 20 ")).toBe(20)
    expect(parseRetryAfterMs("-1")).toBeUndefined()
    expect(parseRetryAfterMs("soon")).toBeUndefined()
    expect(parseRetryAfterMs(undefined)).toBeUndefined()
  })

  it("retry-after is float seconds or an HTTP-date", () => {
    expect(parseRetryAfter("2.5", now)).toBe(2500)
    expect(parseRetryAfter("120", now)).toBe(120_000)
    expect(parseRetryAfter("Fri, 21 Aug 2026 12:00:30 GMT", now)).toBe(30_000)
    expect(parseRetryAfter("Fri, 21 Aug 2026 11:00:00 GMT", now)).toBe(0)
    expect(parseRetryAfter("later", now)).toBeUndefined()
    expect(parseRetryAfter("99999999", now)).toBeUndefined()
  })

  it("Go durations, protobuf durations and RFC 3339 instants", () => {
    expect(parseGoDuration("12ms")).toBe(12)
    expect(parseGoDuration("1.5s")).toBe(1500)
    expect(parseGoDuration("6m0s")).toBe(360_000)
    expect(parseGoDuration("1h2m3.5s")).toBe(3_723_500)
    expect(parseGoDuration("6 minutes")).toBeUndefined()
    expect(parseProtoDuration("37s")).toBe(37_000)
    expect(parseProtoDuration("1.000001s")).toBe(1001)
    expect(parseProtoDuration(37)).toBeUndefined()
    expect(parseResetInstant("2026-08-21T12:00:20Z", now)).toBe(20_000)
    expect(parseResetInstant("tomorrow", now)).toBeUndefined()
  })

  it("order: retry-after-ms, retry-after, body delay, exhausted reset headers", () => {
    expect(retryHintMs({ "retry-after-ms": "10", "retry-after": "5" }, now, { bodyDelayMs: 7 })).toBe(10)
    expect(retryHintMs({ "retry-after": "5" }, now, { bodyDelayMs: 7 })).toBe(5000)
    expect(retryHintMs({}, now, { bodyDelayMs: 7 })).toBe(7)
    const resetHeaders = [
      ["x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"],
      ["x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"]
    ] as const
    const headers = {
      "x-ratelimit-reset-requests": "1s",
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-tokens": "6m0s",
      "x-ratelimit-remaining-tokens": "100"
    }
    expect(retryHintMs(headers, now, { resetHeaders, resetFormat: "go" })).toBe(1000)
    expect(
      retryHintMs({ ...headers, "x-ratelimit-remaining-requests": "5" }, now, { resetHeaders, resetFormat: "go" })
    ).toBe(360_000)
    expect(retryHintMs(headers, now, {})).toBeUndefined()
  })
})
