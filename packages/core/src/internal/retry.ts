/**
 * The retry schedule of a workflow, stepped without sleeping: the attempt loop asks it for the next
 * delay after a retryable failure; `Disposition.retryGate` decides whether the deadline leaves time
 * to wait.
 */
import { Duration, Effect, Option, Random, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"
import type { RetryPolicy } from "./workflowPolicies.js"

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

/** The state of a retry schedule between two steps (its `initial` before the first). */
export type RetryState = unknown

/**
 * One step of `schedule` from `state` without sleeping: the next state and the delay it asks for
 * before the next recurrence (`None` when it is done).
 */
export const nextDelay = (
  schedule: Schedule.Schedule<RetryInput, RetryInput>,
  state: RetryState,
  now: number,
  input: RetryInput
): Effect.Effect<readonly [RetryState, Option.Option<number>]> =>
  Effect.map(schedule.step(now, input, state), ([next, _out, decision]) => [
    next,
    ScheduleDecision.isDone(decision)
      ? Option.none()
      : Option.some(Math.max(0, ScheduleIntervals.start(decision.intervals) - now))
  ])
