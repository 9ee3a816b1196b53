/**
 * `pnpm fallback-lab [flags]`: one call through the real engine under TestClock, printed as an
 * exact virtual timeline. Try:
 *
 *   pnpm fallback-lab                                   # primary hangs: two timeouts, a backoff, a squeezed fallback
 *   pnpm fallback-lab --primary 503:50 --secondary ok:200
 *   pnpm fallback-lab --primary ok:450 --timeout 400    # a late response, ignored
 *   pnpm fallback-lab --primary 429:10:5000             # retry-after longer than the deadline: no wait
 *   pnpm fallback-lab --primary hang --secondary-compatible region
 *   pnpm fallback-lab scenario --primary slow --route-timeout 500 --deadline 800   # the web lab's experiment
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as Render from "../support-ticket/render.js"
import { parse, parseScenarioArgs, scenarioUsage, usage } from "./cli.js"
import { render, runLab } from "./lab.js"
import { computeScenario, renderScenario } from "./model.js"

// Piped into `head` and the like: stop quietly when the reader goes away.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

const argv = process.argv.slice(2).filter((a) => a !== "--")
const flags = argv[0] === "scenario" ? parseScenarioArgs(argv.slice(1)) : parse(argv)
if (typeof flags === "string") {
  process.stderr.write(`${flags}\n`)
  process.exitCode = flags === usage || flags === scenarioUsage ? 0 : 2
} else if ("routeTimeout" in flags) {
  NodeRuntime.runMain(
    Effect.flatMap(computeScenario(flags), (model) => Effect.sync(() => process.stdout.write(renderScenario(model))))
  )
} else {
  const style = Render.styleFor(process.stdout, process.env)
  NodeRuntime.runMain(
    Effect.flatMap(runLab(flags), (report) => Effect.sync(() => process.stdout.write(render(flags, report, style))))
  )
}
