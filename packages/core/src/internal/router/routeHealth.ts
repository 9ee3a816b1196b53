/**
 * Route health as routing reads it: breaker answers and health records that are already settled
 * are read without a fiber step; the others are asked of their store, one by one. Concurrency
 * headroom joins the records of capped targets, and an `UNAVAILABLE` route is excluded.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { Failure, StoreError } from "../../Errors.js"
import { noBreaker, noRecord, noSnapshot, RouteHealth, routeKey, statusOf } from "../../Health.js"
import type { ModelTarget } from "../../ModelTarget.js"
import { ExcludedTarget } from "../../RouteDecision.js"
import type { BreakerView } from "./context.js"

/**
 * The value of a health check that is already settled (`Effect.succeed`, e.g. breakers off), read
 * without a generator step per target; `undefined` when it must run.
 */
export const settled = (check: Effect.Effect<boolean, StoreError>): boolean | undefined =>
  check === noBreaker
    ? false
    : Exit.isExit(check) && Exit.isSuccess(check) && typeof check.value === "boolean"
      ? check.value
      : undefined

/** A health snapshot that is already settled (e.g. `Health.layerOff`'s none): `null` for none, `undefined` when it must run. */
const settledHealth = (
  check: Effect.Effect<Option.Option<RouteHealth>, StoreError>
): RouteHealth | null | undefined => {
  if (!Exit.isExit(check) || !Exit.isSuccess(check) || !Option.isOption(check.value)) return undefined
  const found = check.value
  if (Option.isNone(found)) return null
  return found.value instanceof RouteHealth ? found.value : undefined
}

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
  eligible: ReadonlyArray<ModelTarget>
): Records | Effect.Effect<Records> => {
  const snapshot = breakers.snapshot
  // No health service (or the noop's, which keeps no record): nothing to read per target.
  if (snapshot === undefined || snapshot === noSnapshot) return undefined
  let healths: Array<RouteHealth | undefined> | undefined
  for (let i = 0; i < eligible.length; i++) {
    const check = snapshot(routeKey(eligible[i]!))
    if (check === noRecord) continue
    const known = settledHealth(check)
    if (known === null) continue
    if (known !== undefined) {
      healths ??= new Array<RouteHealth | undefined>(eligible.length)
      healths[i] = known
      continue
    }
    // A store to ask: the rest one by one.
    const before = healths
    return Effect.forEach(eligible, (t, k) =>
      k < i
        ? Effect.succeed(before?.[k])
        : Effect.map(
            Effect.orElseSucceed(k === i ? check : snapshot(routeKey(t)), () => Option.none<RouteHealth>()),
            Option.getOrUndefined
          )
    )
  }
  return healths
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
