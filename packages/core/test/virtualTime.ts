/**
 * Helpers of the tests that run calls under `TestClock`: drive a body to its end in virtual time,
 * and read the typed failure of an exit.
 */
import { Cause, Effect, Exit, Fiber, Option, TestClock } from "effect"

/** Runs `body` in a fiber and moves virtual time by `ms` (default 5 s) until it is done. */
export const driven = <A, E, R>(body: Effect.Effect<A, E, R>, ms = 5_000) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(body)
    yield* TestClock.adjust(ms)
    return yield* Fiber.join(fiber)
  })

/** The typed failure of `exit`, or `undefined` (a success, a defect or an interruption). */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
