/**
 * Route health as routing reads it: breaker answers and health records that the view answers
 * synchronously (its private fast path, `internal/fastPath`) are read without a fiber step; the
 * others are asked of their store, one by one. Concurrency
 * headroom joins the records of capped targets, and an `UNAVAILABLE` route is excluded.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Failure, StoreError } from "../../Errors.js"
import * as FastPath from "../fastPath.js"
import { RouteHealth, routeKey, statusOf } from "../healthRecord.js"
import type { ModelTarget } from "../../ModelTarget.js"
import { ExcludedTarget } from "../../RouteDecision.js"
import type { BreakerView } from "./context.js"

/**
 * The view's synchronous breaker answer (`internal/fastPath`), read without a fiber step:
 * `undefined` when the view has none (or not for `target`), and the Effect must run.
 */
export const openNow = (breakers: BreakerView): ((target: ModelTarget) => boolean | undefined) | undefined =>
  FastPath.health(breakers)?.isOpen

/** A store failure as the router reports it. */
export const storeFailure = (e: StoreError): Failure => ({
  _tag: "StoreError",
  store: e.store,
  operation: e.operation,
  detail: e.detail
})

/** Health records aligned with `eligible` (`undefined`: no record at all). */
export type Records = ReadonlyArray<RouteHealth | undefined> | undefined

/**
 * The health record of each of `eligible`: settled reads at once, else an Effect that asks the
 * store for the rest (a failed read counts as no record; breakers fail closed).
 */
export const readHealth = (
  breakers: BreakerView,
  eligible: ReadonlyArray<ModelTarget>,
  now?: number
): Records | Effect.Effect<Records> => {
  const snapshot = breakers.snapshot
  // No health service (or one that keeps no record, e.g. health off): nothing to read per target.
  const fast = FastPath.health(breakers)
  if (snapshot === undefined || eligible.length === 0 || fast?.noRecords === true) return undefined
  // Records in memory: all read at once, at one clock reading (the caller's, when given: no fiber step).
  const at = fast?.snapshotReady === undefined || fast.snapshotReady() ? fast?.snapshotAt : undefined
  if (at !== undefined) {
    const readAt = (now: number) => eligible.map((t) => at(t, now))
    return now !== undefined
      ? readAt(now)
      : Effect.clockWith((clock) => Effect.succeed(readAt(clock.unsafeCurrentTimeMillis())))
  }
  // A store to ask: every record, one by one.
  return Effect.forEach(eligible, (t) =>
    Effect.map(
      Effect.orElseSucceed(snapshot(routeKey(t)), () => Option.none<RouteHealth>()),
      Option.getOrUndefined
    )
  )
}

/** A record for a target the health service knows nothing about (to carry its concurrency headroom). */
const emptyHealth = (route: string) => ({
  route,
  at: 0,
  breaker: "closed" as const,
  consecutiveFailures: 0,
  samples: 0
})

/** Why a route's record says `UNAVAILABLE`. */
const unhealthyDetail = (record: RouteHealth): string => {
  if (record.breaker === "open") return "breaker open"
  const reset = record.rateLimit?.resetAt
  return reset === undefined ? "rate limit exhausted" : `rate limit exhausted for ${Math.max(0, reset - record.at)} ms`
}

/**
 * `eligible` and their records with concurrency headroom joined in; an `UNAVAILABLE` route is moved
 * to `excluded` (`UNHEALTHY`). New arrays are made only when something changes.
 */
export const withHeadroom = (
  breakers: BreakerView,
  eligible: ReadonlyArray<ModelTarget>,
  health: Records,
  excluded: Array<ExcludedTarget>
): { readonly pool: ReadonlyArray<ModelTarget>; readonly records: Records } => {
  const headroomOf = breakers.concurrencyHeadroom
  if (health === undefined && headroomOf === undefined) return { pool: eligible, records: health }
  let keptTargets: Array<ModelTarget> | undefined
  let keptRecords: Array<RouteHealth | undefined> | undefined
  for (let i = 0; i < eligible.length; i++) {
    const t = eligible[i]!
    let record = health?.[i]
    const headroom = headroomOf?.(t.ref)
    if (headroom !== undefined) {
      record = new RouteHealth(
        { ...(record ?? emptyHealth(routeKey(t))), concurrencyHeadroom: headroom },
        { disableValidation: true }
      )
      keptRecords ??= health === undefined ? new Array<RouteHealth | undefined>(i) : health.slice(0, i)
    }
    if (record !== undefined && statusOf(record) === "UNAVAILABLE") {
      excluded.push(
        new ExcludedTarget(
          { target: t.ref, reason: "UNHEALTHY", detail: unhealthyDetail(record) },
          { disableValidation: true }
        )
      )
      keptTargets ??= eligible.slice(0, i)
      keptRecords ??= health === undefined ? new Array<RouteHealth | undefined>(i) : health.slice(0, i)
      continue
    }
    keptTargets?.push(t)
    keptRecords?.push(record)
  }
  return { pool: keptTargets ?? eligible, records: keptRecords ?? health }
}
