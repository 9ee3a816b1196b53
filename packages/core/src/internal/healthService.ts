/**
 * `Health` over a `BreakerStore`: the health records of the routes (most recently used last,
 * at most `maxRoutes`), the breakers' admission and bookkeeping, and the retry budget.
 */
import { Clock, Duration, Effect, Metric, Option } from "effect"
import type * as Store from "../BreakerStore.js"
import type { StoreError } from "../Errors.js"
import type { ModelTarget } from "../ModelTarget.js"
import * as Breaker from "./breaker.js"
import * as FastPath from "./fastPath.js"
import { type TripReason, storeFailed, transitions } from "./healthBreakers.js"
import { type HealthConfig, type Resolved, resolve } from "./healthConfig.js"
import { metrics, RetryBudgetSnapshot, RouteHealth, routeKey, statusOf } from "./healthRecord.js"
import { RetryBudget } from "./healthRetryBudget.js"
import type { AttemptSignal, Service } from "./healthTypes.js"
import { Kind, RouteWindow, type Scratch, scratchOf } from "./healthWindow.js"

const kindOf = (signal: AttemptSignal): Kind => {
  if (signal.availabilityFailure) return signal.outcome === "timeout" ? Kind.timeout : Kind.failure
  return signal.outcome === "success" ? Kind.success : Kind.neutral
}

/** The routes' health records; insertion order is recency order (a record moves its route to the end). */
const routeWindows = (samples: number, maxRoutes: number) => {
  const windows = new Map<string, RouteWindow>()
  const touch = (ref: string): RouteWindow => {
    let w = windows.get(ref)
    if (w !== undefined) {
      windows.delete(ref)
    } else {
      w = new RouteWindow(samples)
      if (windows.size >= maxRoutes) {
        const oldest = windows.keys().next()
        if (oldest.done !== true) windows.delete(oldest.value)
      }
    }
    windows.set(ref, w)
    return w
  }
  return { windows, touch }
}

/** Adds one attempt's sample to its route's record: outcome, last error, rate-limit headroom. */
const addSample = (w: RouteWindow, now: number, kind: Kind, signal: AttemptSignal): void => {
  w.add(now, kind, signal.latencyMs, signal.ttftMs)
  if (kind !== Kind.success) {
    w.lastErrorClass = kind === Kind.neutral && signal.outcome === "timeout" ? "deadline" : signal.outcome
    w.lastErrorTag = signal.errorTag
    w.lastErrorAt = now
  }
  const rl = signal.rateLimit
  if (rl !== undefined) {
    w.headroom = {
      remainingRequests: rl.remainingRequests,
      limitRequests: rl.limitRequests,
      remainingTokens: rl.remainingTokens,
      limitTokens: rl.limitTokens,
      resetAt: rl.resetAt,
      reportedAt: rl.reportedAt
    }
  } else if (signal.outcome === "rate_limited") {
    w.headroom = {
      remainingRequests: 0,
      limitRequests: w.headroom?.limitRequests,
      remainingTokens: w.headroom?.remainingTokens,
      limitTokens: w.headroom?.limitTokens,
      resetAt: signal.retryAfterMs !== undefined ? now + signal.retryAfterMs : undefined,
      reportedAt: now
    }
  }
}

/** The health of `route` at `now` from its record `w` and breaker state `s`; `undefined` when nothing is known. */
const snapshotOf = (
  route: string,
  now: number,
  w: RouteWindow | undefined,
  s: Store.BreakerState | undefined,
  rules: Resolved,
  windowMs: number,
  scratch: Scratch
): RouteHealth | undefined => {
  if (w === undefined && s === undefined) return undefined
  const v = Breaker.view(s, now, rules)
  const st = w?.stats(now, windowMs, scratch)
  const n = st?.samples ?? 0
  const rate = (k: number) => (n === 0 ? undefined : k / n)
  const breaker = Breaker.statusOf(v)
  const successRate = rate(st?.successes ?? 0)
  const rateLimit = w?.headroom
  const status = statusOf({ at: now, breaker, samples: n, successRate, rateLimit })
  return new RouteHealth(
    {
      route,
      at: now,
      breaker,
      breakerSince: v?.since,
      probeAt: v?.status === "open" ? v.since + rules.coolDownMs : undefined,
      consecutiveFailures: w?.consecutiveFailures ?? 0,
      samples: n,
      successRate,
      failureRate: rate((st?.failures ?? 0) + (st?.timeouts ?? 0)),
      timeoutRate: rate(st?.timeouts ?? 0),
      latencyP50Ms: st?.latencyP50,
      latencyP95Ms: st?.latencyP95,
      ttftP50Ms: st?.ttftP50,
      ttftP95Ms: st?.ttftP95,
      lastErrorClass: w?.lastErrorClass,
      lastErrorTag: w?.lastErrorTag,
      lastErrorAt: w?.lastErrorAt,
      lastAttemptAt: w?.lastAt,
      rateLimit,
      latencyP95SmoothedMs: w?.latencyP95Smoothed,
      ttftP95SmoothedMs: w?.ttftP95Smoothed,
      status
    },
    { disableValidation: true }
  )
}

/** The retry budget's part of the service (in process, no store). */
const retryBudgetOf = (config: HealthConfig) => {
  const rb = config.retryBudget
  const budget = new RetryBudget(rb.ratio, rb.minPerSecond, rb.burst)
  return {
    budget,
    onFirstAttempt: Effect.map(Clock.currentTimeMillis, (now) => budget.deposit(now)),
    tryRetry: rb.enabled
      ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
          budget.withdraw(now)
            ? Effect.succeed(true)
            : Effect.as(Metric.increment(metrics.retryBudgetRejections), false)
        )
      : Effect.succeed(true),
    retryBudget: Effect.map(
      Clock.currentTimeMillis,
      (now) =>
        new RetryBudgetSnapshot({
          enabled: rb.enabled,
          tokens: budget.tokens(now),
          capacity: budget.capacity,
          firstAttempts: budget.firstAttempts,
          retriesGranted: budget.granted,
          retriesRejected: budget.rejected
        })
    )
  }
}

/**
 * The service over `store` (`config` already validated). Its fast path answers what needs no
 * store: admission of a route whose breaker is off, and the first-attempt deposit.
 */
export const makeService = (config: HealthConfig, store: Store.Service): Service => {
  const windowMs = Duration.toMillis(config.window.duration)
  const defaults = resolve(config.breaker, undefined)
  const overridden = new Map(Object.entries(config.targets).map(([ref, o]) => [ref, resolve(config.breaker, o)]))
  const settingsFor = (ref: string): Resolved => overridden.get(ref) ?? defaults
  /** The settings of a route key (`<ref>#<model>`): its ref's override, else the defaults. */
  const settingsOfKey = (route: string): Resolved => {
    if (overridden.size === 0) return defaults
    for (const [ref, rules] of overridden) if (route.length > ref.length && route.startsWith(`${ref}#`)) return rules
    return overridden.get(route) ?? defaults
  }
  // Each target's route key, made once per target value (the hot path reads it per attempt).
  const keys = new WeakMap<ModelTarget, string>()
  const keyOf = (target: ModelTarget): string => {
    let key = keys.get(target)
    if (key === undefined) {
      key = routeKey(target)
      keys.set(target, key)
    }
    return key
  }
  const { touch, windows } = routeWindows(config.window.samples, config.maxRoutes)
  const transit = transitions(store, windows)
  const retries = retryBudgetOf(config)
  // The service's room for sorting a record's values (reads are synchronous: one reader at a time).
  const scratch = scratchOf(config.window.samples)
  // A store read at once (in memory, a mirror in sync): closed breakers and records take no fiber step.
  const fastStore = FastPath.breakerStore(store)

  const tripReason = (w: RouteWindow, now: number, s: Resolved): TripReason | undefined => {
    if (s.consecutiveFailures > 0 && w.consecutiveFailures >= s.consecutiveFailures) return "consecutive_failures"
    if (s.failureRatio > 0) {
      const { calls, failures } = w.availability(now, windowMs)
      if (calls >= s.minimumCalls && failures / calls >= s.failureRatio) return "failure_ratio"
    }
    return undefined
  }

  const isOpen = (target: ModelTarget): Effect.Effect<boolean, StoreError> => {
    const rules = settingsFor(target.ref)
    if (!rules.enabled) return Effect.succeed(false)
    return Effect.flatMap(store.get(keyOf(target)), (s) =>
      s === undefined
        ? Effect.succeed(false)
        : Effect.map(Clock.currentTimeMillis, (now) => !Breaker.admits(s, now, rules))
    )
  }

  const tryAcquire = (target: ModelTarget): Effect.Effect<boolean, StoreError> => {
    const rules = settingsFor(target.ref)
    if (!rules.enabled) return Effect.succeed(true)
    const key = keyOf(target)
    return Effect.flatMap(store.get(key), (s) =>
      s === undefined
        ? Effect.succeed(true)
        : Effect.flatMap(Clock.currentTimeMillis, (now) =>
            transit(key, now, rules, (cur) => Breaker.acquire(cur, now, rules))
          )
    )
  }

  const release = (target: ModelTarget): Effect.Effect<void> => {
    const rules = settingsFor(target.ref)
    if (!rules.enabled) return Effect.void
    const key = keyOf(target)
    return Effect.catchAll(
      Effect.flatMap(store.get(key), (s) =>
        s === undefined
          ? Effect.void
          : Effect.flatMap(Clock.currentTimeMillis, (now) =>
              transit(key, now, rules, (cur) => [undefined, Breaker.release(cur, now, rules)] as const)
            )
      ),
      () => storeFailed(key, "release")
    )
  }

  /** Whether `target`'s breaker is off, or closed (no state) in a store read at once. */
  const closedNow = (target: ModelTarget): boolean =>
    !settingsFor(target.ref).enabled ||
    (fastStore !== undefined && fastStore.ready() && fastStore.get(keyOf(target)) === undefined)

  /** `record` at `now`, the sample kept at once; returns what is left to run (`undefined`: nothing). */
  const recordAt = (target: ModelTarget, signal: AttemptSignal, now: number): Effect.Effect<void> | undefined => {
    const ref = keyOf(target)
    const kind = kindOf(signal)
    const w = touch(ref)
    addSample(w, now, kind, signal)
    const rules = settingsFor(target.ref)
    if (!rules.enabled) return undefined
    const result: Breaker.Result = kind === Kind.success ? "success" : kind === Kind.neutral ? "neutral" : "failure"
    const reason = result === "failure" ? tripReason(w, now, rules) : undefined
    const update = (s: Store.BreakerState | undefined): Effect.Effect<void, StoreError> =>
      // A closed breaker that stays closed only reads the store.
      s === undefined && reason === undefined
        ? Effect.void
        : transit(
            ref,
            now,
            rules,
            (cur) => [undefined, Breaker.onResult(cur, now, rules, result, reason !== undefined)],
            reason
          )
    if (fastStore !== undefined && fastStore.ready()) {
      const s = fastStore.get(ref)
      if (s === undefined && reason === undefined) return undefined
      return Effect.catchAll(update(s), () => storeFailed(ref, "record"))
    }
    return Effect.catchAll(Effect.flatMap(store.get(ref), update), () => storeFailed(ref, "record"))
  }

  const record = (target: ModelTarget, signal: AttemptSignal): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => recordAt(target, signal, now) ?? Effect.void)

  const snapshotAt = (route: string, now: number, s: Store.BreakerState | undefined) =>
    snapshotOf(route, now, windows.get(route), s, settingsOfKey(route), windowMs, scratch)

  const service: Service = {
    isOpen,
    tryAcquire,
    release,
    record,
    onFirstAttempt: retries.onFirstAttempt,
    tryRetry: retries.tryRetry,
    snapshot: (route) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(store.get(route), (s) => Option.fromNullable(snapshotAt(route, now, s)))
      ),
    snapshotAll: Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.forEach([...windows.keys()], (route) => Effect.map(store.get(route), (s) => snapshotAt(route, now, s)!))
    ),
    retryBudget: retries.retryBudget
  }
  return FastPath.attach(service, {
    _tag: "Health",
    // A breaker with a state (open or half-open) needs the clock and may transit: its Effect runs.
    isOpen: (target) => (closedNow(target) ? false : undefined),
    tryAcquire: (target) => (closedNow(target) ? true : undefined),
    recordAt,
    snapshotAt:
      fastStore === undefined
        ? undefined
        : (target, now) => {
            const route = keyOf(target)
            return snapshotAt(route, now, fastStore.get(route))
          },
    snapshotReady: fastStore?.ready,
    onFirstAttempt: (now) => retries.budget.deposit(now)
  })
}
