/**
 * The circuit breaker of one route as pure functions over its stored state, so that a shared store
 * can apply them with compare-and-set. `undefined` is a closed breaker with nothing to remember.
 */
import type { BreakerState } from "./breakerState.js"

/** Stored state of a breaker that is not plainly closed (the `BreakerStore` entry). */
export type State = BreakerState

export type Status = "closed" | "open" | "half_open"

/** The settings the state machine needs. */
export interface Rules {
  readonly coolDownMs: number
  readonly halfOpenProbes: number
}

export const statusOf = (s: State | undefined): Status => s?.status ?? "closed"

export const opened = (now: number): State => ({
  status: "open",
  since: now,
  probes: 0,
  probeSuccesses: 0,
  lastProbeAt: 0
})

/** The state as of `now`: an open breaker whose cool-down has ended is half-open since that instant. */
export const view = (s: State | undefined, now: number, rules: Rules): State | undefined =>
  s !== undefined && s.status === "open" && now >= s.since + rules.coolDownMs
    ? { status: "half_open", since: s.since + rules.coolDownMs, probes: 0, probeSuccesses: 0, lastProbeAt: 0 }
    : s

/**
 * A probe that was granted and never reported (its fiber died without `record` or `release`) is
 * forgotten after one cool-down, so a lost probe cannot keep a route half-open forever.
 */
const probeSlotFree = (s: State, now: number, rules: Rules): boolean =>
  s.probes + s.probeSuccesses < rules.halfOpenProbes || (s.probes > 0 && now - s.lastProbeAt >= rules.coolDownMs)

/** Whether a call could start on the route now (without taking a probe slot). */
export const admits = (s: State | undefined, now: number, rules: Rules): boolean => {
  const v = view(s, now, rules)
  if (v === undefined) return true
  return v.status === "half_open" && probeSlotFree(v, now, rules)
}

/** Takes the right to start an attempt: always granted when closed, a probe slot when half-open. */
export const acquire = (s: State | undefined, now: number, rules: Rules): readonly [boolean, State | undefined] => {
  const v = view(s, now, rules)
  if (v === undefined) return [true, undefined]
  if (v.status === "open") return [false, v]
  if (v.probes + v.probeSuccesses < rules.halfOpenProbes) {
    return [true, { ...v, probes: v.probes + 1, lastProbeAt: now }]
  }
  if (v.probes > 0 && now - v.lastProbeAt >= rules.coolDownMs) {
    return [true, { ...v, probes: 1, lastProbeAt: now }]
  }
  return [false, v]
}

/** Gives back a probe slot whose attempt was cancelled or never started. */
export const release = (s: State | undefined, now: number, rules: Rules): State | undefined => {
  const v = view(s, now, rules)
  return v !== undefined && v.status === "half_open" && v.probes > 0 ? { ...v, probes: v.probes - 1 } : v
}

/** What one attempt result does to the breaker. */
export type Result = "success" | "failure" | "neutral"

/**
 * Applies one attempt result. `trip` says whether the closed-state rules (consecutive failures,
 * failure ratio) are crossed. Results that arrive while open (attempts started before it opened)
 * are ignored. A half-open breaker re-opens on a failed probe and closes once `halfOpenProbes`
 * probes succeeded; a neutral result only gives its slot back.
 */
export const onResult = (
  s: State | undefined,
  now: number,
  rules: Rules,
  result: Result,
  trip: boolean
): State | undefined => {
  const v = view(s, now, rules)
  if (v === undefined) return trip ? opened(now) : undefined
  if (v.status === "open") return v
  const probes = Math.max(0, v.probes - 1)
  switch (result) {
    case "failure":
      return opened(now)
    case "success": {
      const probeSuccesses = v.probeSuccesses + 1
      return probeSuccesses >= rules.halfOpenProbes ? undefined : { ...v, probes, probeSuccesses }
    }
    case "neutral":
      return { ...v, probes }
  }
}
