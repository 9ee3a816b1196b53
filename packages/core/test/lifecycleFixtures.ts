/**
 * Helpers shared by the model-lifecycle tests (canary assignment and controller, quality signals,
 * shadow traffic, model versions): the candidate target, virtual-time steps, canary keys.
 */
import { Effect, Fiber, TestClock } from "effect"
import * as RouterEngine from "../src/internal/router/engine.js"

/** The canary / shadow candidate of the lifecycle tests (a `vllm` target of the fixtures' `target`). */
export const candidateRef = "model://vllm/candidate@eu" as const

/** Moves the `TestClock` to the virtual instant `ms`. */
export const at = (ms: number) => Effect.flatMap(TestClock.currentTimeMillis, (now) => TestClock.adjust(ms - now))

/** Forks every effect, moves virtual time by `ms`, then joins them: their results, in order. */
export const concurrently = <A, E, R>(effects: ReadonlyArray<Effect.Effect<A, E, R>>, ms: number) =>
  Effect.gen(function* () {
    const fibers = yield* Effect.forEach(effects, (effect) => Effect.fork(effect))
    yield* TestClock.adjust(ms)
    return yield* Effect.forEach(fibers, Fiber.join)
  })

/** The first of `prefix0`, `prefix1`, … that lands on `side` of the canary `{ id, share }`. */
export const keyOn = (
  canary: { readonly id: string; readonly share: number },
  side: "candidate" | "baseline",
  prefix = "s-"
): string => {
  for (let i = 0; ; i++) {
    const key = `${prefix}${i}`
    if (RouterEngine.canarySide(canary, key) === side) return key
  }
}
