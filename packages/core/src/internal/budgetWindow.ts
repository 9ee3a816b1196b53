/**
 * Budget windows: the UTC day, the UTC month, or the whole time (`total`), with their store keys.
 */
import { Duration } from "effect"
import type { Period, Window } from "./budgetTypes.js"

/** Default time an unsettled reservation lives. Must exceed the longest call deadline. */
export const defaultReservationTtl: Duration.Duration = Duration.minutes(15)

/** Longest reservation TTL accepted: 7 days. */
export const maxReservationTtl: Duration.Duration = Duration.days(7)

const day = 86_400_000
const pad = (n: number) => String(n).padStart(2, "0")

/** The window of `period` that contains the instant `now` (epoch millis, UTC). */
export const windowOf = (period: Period, now: number): Window => {
  switch (period) {
    case "total":
      return { key: "total", start: -Infinity, end: Infinity }
    case "daily": {
      const start = Math.floor(now / day) * day
      const d = new Date(start)
      return {
        key: `d${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`,
        start,
        end: start + day
      }
    }
    case "monthly": {
      const d = new Date(now)
      const y = d.getUTCFullYear()
      const m = d.getUTCMonth()
      return { key: `m${y}-${pad(m + 1)}`, start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) }
    }
  }
}

/**
 * The window of each period, recomputed only when the clock leaves it (one cache per `Budgets`
 * service).
 */
export const windowCache = (): ((period: Period, now: number) => Window) => {
  const windows: Record<Period, Window | undefined> = { daily: undefined, monthly: undefined, total: undefined }
  return (period, now) => {
    const cached = windows[period]
    if (cached !== undefined && now >= cached.start && now < cached.end) return cached
    const window = windowOf(period, now)
    windows[period] = window
    return window
  }
}
