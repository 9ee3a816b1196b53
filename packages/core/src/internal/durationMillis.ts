/**
 * A `Duration`'s milliseconds, as `Duration.toMillis` gives them, read from its value: no
 * `Duration.match` handlers object per read (the call path reads a handful of durations per call).
 *
 * @internal
 */
import type { Duration } from "effect"

/** `Duration.toMillis(d)`: `Infinity` for an infinite duration, fractional milliseconds for nanos. */
export const millisOf = (d: Duration.Duration): number => {
  const v = d.value
  switch (v._tag) {
    case "Millis":
      return v.millis
    case "Nanos":
      return Number(v.nanos) / 1_000_000
    case "Infinity":
      return Infinity
  }
}
