/**
 * The circuit breakers of `Health` over a `BreakerStore`: a state change applied in the store
 * (`transit`), the transitions it made (an open breaker's cool-down end in between), and their
 * announcement (a log line, the state gauge and the transition counter).
 *
 * @internal
 */
import { Effect, Metric } from "effect"
import type * as Store from "../BreakerStore.js"
import type { StoreError } from "../Errors.js"
import * as Breaker from "./breaker.js"
import type { Resolved } from "./healthConfig.js"
import { gaugeValue, metrics } from "./healthRecord.js"
import type { RouteWindow } from "./healthWindow.js"

/** Why a breaker opened. @internal */
export type TripReason = "consecutive_failures" | "failure_ratio" | "probe_failed"

interface Transition {
  readonly from: Breaker.Status
  readonly to: Breaker.Status
  /** The instant the transition took effect (a cool-down ends before anyone notices). */
  readonly at: number
}

/** The transitions between `before` and `after`, with an open breaker's cool-down end in between. */
const transitionsOf = (
  before: Store.BreakerState | undefined,
  after: Store.BreakerState | undefined,
  now: number,
  rules: Breaker.Rules
): ReadonlyArray<Transition> => {
  const out: Array<Transition> = []
  const seen = Breaker.view(before, now, rules)
  const from = Breaker.statusOf(before)
  const mid = Breaker.statusOf(seen)
  if (from !== mid) out.push({ from, to: mid, at: seen!.since })
  const to = Breaker.statusOf(after)
  if (mid !== to) out.push({ from: mid, to, at: now })
  return out
}

/** Bookkeeping the store could not do: logged with route and operation only, and counted. @internal */
export const storeFailed = (route: string, operation: "record" | "release") =>
  Effect.zipRight(
    Metric.increment(Metric.tagged(metrics.breakerStoreFailures, "operation", operation)),
    Effect.annotateLogs(Effect.logWarning("breaker store failed; breaker bookkeeping skipped"), { route, operation })
  )

/** One transition announced; a breaker that closed starts its route's counts afresh. */
const announceOne = (
  route: string,
  t: Transition,
  reason: TripReason | undefined,
  rules: Resolved,
  windows: ReadonlyMap<string, RouteWindow>
) => {
  const annotations = {
    route,
    from: t.from,
    to: t.to,
    at: t.at,
    ...(t.to === "open" ? { reason: reason ?? "probe_failed", coolDownMs: rules.coolDownMs } : {}),
    ...(t.to === "half_open" ? { probes: rules.halfOpenProbes } : {})
  }
  const log =
    t.to === "open"
      ? Effect.logWarning("circuit breaker opened")
      : t.to === "half_open"
        ? Effect.logInfo("circuit breaker half-open")
        : Effect.logInfo("circuit breaker closed")
  if (t.to === "closed") {
    const w = windows.get(route)
    if (w !== undefined) {
      w.countFrom = t.at
      w.consecutiveFailures = 0
    }
  }
  return Effect.all(
    [
      log.pipe(Effect.annotateLogs(annotations)),
      Metric.set(Metric.tagged(metrics.breakerState, "route", route), gaugeValue(t.to)),
      Metric.increment(
        Metric.tagged(
          Metric.tagged(Metric.tagged(metrics.breakerTransitions, "route", route), "from", t.from),
          "to",
          t.to
        )
      )
    ],
    { discard: true }
  )
}

/**
 * `transit(route, now, rules, f, reason)` applies `f` to the breaker of `route` in `store` and
 * announces the transitions it made. `windows` are the routes' health records (reset on close).
 *
 * @internal
 */
export const transitions =
  (store: Store.Service, windows: ReadonlyMap<string, RouteWindow>) =>
  <A>(
    route: string,
    now: number,
    rules: Resolved,
    f: (s: Store.BreakerState | undefined) => readonly [A, Store.BreakerState | undefined],
    reason?: TripReason
  ): Effect.Effect<A, StoreError> =>
    Effect.flatMap(
      store.modify(route, (before) => {
        const [a, after] = f(before)
        return [{ a, transitions: transitionsOf(before, after, now, rules) }, after] as const
      }),
      ({ a, transitions }) =>
        transitions.length === 0
          ? Effect.succeed(a)
          : Effect.as(
              Effect.forEach(transitions, (t) => announceOne(route, t, reason, rules, windows), { discard: true }),
              a
            )
    )
