/**
 * Parsing of the retry hints providers send: `retry-after-ms`, `retry-after` (seconds or an
 * HTTP-date), Gemini's `RetryInfo.retryDelay` and the rate-limit reset headers (OpenAI Go-style
 * durations, Anthropic RFC 3339 instants). Every parser is total: a malformed value is `undefined`.
 *
 * @internal
 */

/** Upper bound on any hint we accept (a day); anything larger is treated as malformed. @internal */
const maxHintMs = 24 * 60 * 60 * 1000

const bounded = (ms: number): number | undefined =>
  Number.isFinite(ms) && ms >= 0 && ms <= maxHintMs ? Math.ceil(ms) : undefined

const numeric = /^\s*\d+(?:\.\d+)?\s*$/

/**
 * `retry-after-ms`: a non-negative float number of milliseconds. `0` is a valid hint (unlike the
 * Anthropic SDK, which treats it as absent).
 *
 * @internal
 */
export const parseRetryAfterMs = (value: string | undefined): number | undefined =>
  value !== undefined && numeric.test(value) ? bounded(Number.parseFloat(value)) : undefined

/**
 * `retry-after`: float seconds, or an HTTP-date (a date in the past means "now").
 *
 * @internal
 */
export const parseRetryAfter = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined) return undefined
  if (numeric.test(value)) return bounded(Number.parseFloat(value) * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : bounded(Math.max(0, at - nowMs))
}

const goUnits: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
const goDuration = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/
const goPart = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g

/**
 * A Go duration (`12ms`, `1.5s`, `6m0s`), as in OpenAI's `x-ratelimit-reset-*` headers.
 *
 * @internal
 */
export const parseGoDuration = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (!goDuration.test(trimmed)) return undefined
  let total = 0
  for (const match of trimmed.matchAll(goPart)) {
    const unit = goUnits[match[2] ?? ""]
    if (unit === undefined) return undefined
    total += Number.parseFloat(match[1] ?? "0") * unit
  }
  return bounded(total)
}

/**
 * A protobuf JSON duration (`"37s"`, `"1.5s"`), as in Gemini's `RetryInfo.retryDelay`.
 *
 * @internal
 */
export const parseProtoDuration = (value: unknown): number | undefined => {
  if (typeof value !== "string") return undefined
  const match = /^\s*(\d+(?:\.\d+)?)s\s*$/.exec(value)
  return match?.[1] === undefined ? undefined : bounded(Number.parseFloat(match[1]) * 1000)
}

/**
 * An RFC 3339 instant (Anthropic's `anthropic-ratelimit-*-reset`), as a delay from `nowMs`.
 *
 * @internal
 */
export const parseResetInstant = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined || !/^\d{4}-\d{2}-\d{2}T/.test(value)) return undefined
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : bounded(Math.max(0, at - nowMs))
}

/**
 * Where the delay of a retry hint came from.
 *
 * @internal
 */
export type HintSource = "retry-after-ms" | "retry-after" | "body" | "reset-header"

/**
 * The retry hint of a response, in the order of providers.md §9: `retry-after-ms`, `retry-after`,
 * a delay from the body (Gemini `retryDelay`), then the reset headers.
 *
 * `resetHeaders` lists `[reset header, remaining header]` pairs; the resets of exhausted limits
 * (remaining `0`) win, otherwise the longest reset is used.
 *
 * @internal
 */
export const retryHintMs = (
  headers: Readonly<Record<string, string | undefined>>,
  nowMs: number,
  options: {
    readonly bodyDelayMs?: number | undefined
    readonly resetHeaders?: ReadonlyArray<readonly [string, string]> | undefined
    readonly resetFormat?: "go" | "rfc3339" | undefined
  }
): number | undefined => {
  const ms = parseRetryAfterMs(headers["retry-after-ms"])
  if (ms !== undefined) return ms
  const after = parseRetryAfter(headers["retry-after"], nowMs)
  if (after !== undefined) return after
  if (options.bodyDelayMs !== undefined) return options.bodyDelayMs
  if (options.resetHeaders === undefined) return undefined
  const parse = (value: string | undefined) =>
    options.resetFormat === "rfc3339" ? parseResetInstant(value, nowMs) : parseGoDuration(value)
  let exhausted: number | undefined
  let any: number | undefined
  for (const [reset, remaining] of options.resetHeaders) {
    const delay = parse(headers[reset])
    if (delay === undefined) continue
    any = any === undefined ? delay : Math.max(any, delay)
    if (headers[remaining]?.trim() === "0") exhausted = exhausted === undefined ? delay : Math.max(exhausted, delay)
  }
  return exhausted ?? any
}
