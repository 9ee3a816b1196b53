/**
 * An asynchronous step that owns its deadline: one native timer, cleared when the step completes,
 * and the abort its work hands back. It has the outcomes of the engine's `bounded`
 * under the live clock (`Date.now` instants), without a forked fiber: the step's value, or
 * `undefined` when the deadline came first — its work then aborted.
 *
 * Tie rule (as `bounded`'s): when the timer fires, a completion due at the same instant (its own
 * timer fired earlier in this turn, its I/O callback queued in it) still wins — the step is cut one
 * macrotask later only if it has not completed by then.
 *
 * @internal
 */
import { Effect } from "effect"

/** `setTimeout` takes at most 2^31 − 1 ms. */
const maxNativeDelay = 2 ** 31 - 1

/**
 * Runs `start(done)` as one `Effect.async` step: `done` settles it (once); `start` returns how to
 * abort its work. At the epoch-ms instant `until` (when given) the work is aborted and the step
 * answers `undefined`. Interrupting the step aborts the work and clears the timer.
 *
 * @internal
 */
export const abortableUntil = <A, E>(
  until: number | undefined,
  start: (done: (result: Effect.Effect<A, E>) => void) => () => void
): Effect.Effect<A | undefined, E> =>
  Effect.async<A | undefined, E>((resume) => {
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    let abort: (() => void) | undefined
    const cut = () => {
      if (settled) return
      settled = true
      abort?.()
      resume(Effect.succeed(undefined))
    }
    if (until !== undefined) {
      timer = setTimeout(
        () => {
          if (!settled) setImmediate(cut)
        },
        Math.min(maxNativeDelay, Math.max(0, until - Date.now()))
      )
    }
    abort = start((result) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      resume(result)
    })
    return Effect.sync(() => {
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      abort?.()
    })
  })
