/**
 * A plain-text {@link Render.Output} for the demo scenario tests, and what was written to it.
 */
import { Effect } from "effect"
import * as Render from "../support-ticket/render.js"

/** An output without colors that keeps everything written to it. */
export const plainOutput = (): { readonly output: Render.Output; readonly text: () => string } => {
  let out = ""
  return {
    output: {
      json: false,
      style: Render.plain,
      write: (s) => {
        out += s
      }
    },
    text: () => out
  }
}

/** Runs a demo scenario on a {@link plainOutput}: its report and the text it printed. */
export const runScenario = <A, E, R>(run: (output: Render.Output) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const { output, text } = plainOutput()
    const report = yield* run(output)
    return { report, out: text() }
  })
