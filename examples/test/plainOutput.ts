/**
 * A plain-text {@link Render.Output} for the demo scenario tests, and what was written to it.
 */
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
