/**
 * Helpers of the tests that run calls under `TestClock`: drive a body to its end in virtual time,
 * and read the typed failure of an exit.
 */
import { assert } from "@effect/vitest"
import { ModelGateway } from "@modelgate/core"
import type { ModelCommand } from "@modelgate/core/ModelCommand"
import { Cause, Clock, Effect, Exit, Fiber, Option, TestClock } from "effect"

/** Runs `body` in a fiber and moves virtual time by `ms` (default 5 s) until it is done. */
export const driven = <A, E, R>(body: Effect.Effect<A, E, R>, ms = 5_000) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(body)
    yield* TestClock.adjust(ms)
    return yield* Fiber.join(fiber)
  })

/** The exit of `ModelGateway.generate(cmd)` (never fails). */
export const generateExit = (cmd: ModelCommand) =>
  Effect.flatMap(ModelGateway.ModelGateway, (gateway) => Effect.exit(gateway.generate(cmd)))

/**
 * Forks `generate`, advances virtual time by `ms`, asserts the call finished by then, and returns
 * its exit with the virtual instant it ended (`at`).
 */
export const generateFor = (cmd: ModelCommand, ms: number, notDone = "call did not finish in time") =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(
      Effect.flatMap(generateExit(cmd), (exit) => Effect.map(Clock.currentTimeMillis, (at) => ({ exit, at })))
    )
    yield* TestClock.adjust(ms)
    assert.isTrue(Option.isSome(yield* Fiber.poll(fiber)), notDone)
    return yield* Fiber.join(fiber)
  })

/** The typed failure of `exit`, or `undefined` (a success, a defect or an interruption). */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
