/**
 * Timing primitives of one attempt.
 */
import { Duration, Effect, Fiber, Option, Random, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"
import type { RetryPolicy } from "../Workflow.js"

/**
 * Runs `self` bounded by `timeout`. `None` when the timer fired first.
 *
 * The timer fiber is armed before the attempt starts, so a completion at exactly the same virtual
 * instant as the timeout counts as a completion (DESIGN §4 tie rule): `TestClock` wakes sleeps due
 * at the same instant latest-registered first.
 *
 * Hot path: two fibers per attempt (the timer and the attempt) that settle one `Deferred`, first
 * wins; a `raceFirst` of their joins would fork two more (fibers dominate the gateway's own cost).
 */
export const withAttemptTimeout = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  timeout: Duration.Duration
): Effect.Effect<Option.Option<A>, E, R> =>
  // `raceWith` starts its left side first: the timer's sleep is registered before the attempt's.
  Effect.raceWith(Effect.sleep(timeout), self, {
    onSelfDone: (_timer, attempt) => Effect.as(Fiber.interrupt(attempt), Option.none<A>()),
    onOtherDone: (exit, timer) => Effect.zipRight(Fiber.interruptFork(timer), Effect.map(exit, Option.some))
  })

/**
 * What a retry schedule needs from the failure it is asked to retry.
 */
export interface RetryInput {
  readonly retryAfter?: Duration.Duration | undefined
}

/**
 * Exponential backoff with full jitter (a uniformly random delay in `[0, backoff)`, from Effect's
 * `Random`, so a seeded `Random` reproduces it), capped at `maxDelay`; a provider's retry-after is
 * the minimum wait.
 */
export const retrySchedule = (policy: RetryPolicy): Schedule.Schedule<RetryInput, RetryInput> =>
  Schedule.zipLeft(
    Schedule.identity<RetryInput>(),
    Schedule.exponential(policy.baseDelay, policy.factor).pipe(
      Schedule.modifyDelayEffect((_, delay) =>
        Effect.map(Random.next, (r) =>
          Duration.millis(Math.floor(r * Duration.toMillis(Duration.min(delay, policy.maxDelay))))
        )
      )
    )
  ).pipe(
    Schedule.modifyDelay((input, delay) =>
      input.retryAfter !== undefined ? Duration.max(delay, input.retryAfter) : delay
    )
  )

/**
 * One step of a schedule without sleeping: the delay it asks for before the next recurrence, or
 * `None` when it is done.
 */
export interface Stepper {
  readonly next: (now: number, input: RetryInput) => Effect.Effect<Option.Option<number>>
}

export const stepper = (schedule: Schedule.Schedule<RetryInput, RetryInput>): Stepper => {
  let state: unknown = schedule.initial
  return {
    next: (now, input) =>
      Effect.map(schedule.step(now, input, state), ([next, _out, decision]) => {
        state = next
        if (ScheduleDecision.isDone(decision)) return Option.none()
        return Option.some(Math.max(0, ScheduleIntervals.start(decision.intervals) - now))
      })
  }
}
