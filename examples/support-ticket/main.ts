/**
 * `pnpm demo [--scenario normal|outage|rate-limit|slow|budget|residency|all] [--json] [--live]`
 *
 * Runs the support-ticket assistant against the in-process mock provider server (no keys, no
 * network). `--live` sends the calls of every provider whose key is in the environment
 * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`) to the real API instead; scenarios
 * only script the mock.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Logger, LogLevel } from "effect"
import { parse, usage } from "./cli.js"
import { runAll } from "./program.js"
import * as Render from "./render.js"

// Piped into `head` and the like: stop quietly when the reader goes away.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

const flags = parse(process.argv.slice(2))

if (typeof flags === "string") {
  process.stderr.write(`${flags}\n`)
  process.exitCode = flags === usage ? 0 : 2
} else {
  const keys = [
    ["openai", "OPENAI_API_KEY"],
    ["anthropic", "ANTHROPIC_API_KEY"],
    ["gemini", "GEMINI_API_KEY"]
  ] as const
  const live = flags.live ? keys.filter(([, key]) => (process.env[key] ?? "") !== "").map(([provider]) => provider) : []
  const program = runAll(
    {
      json: flags.json,
      style: flags.json ? Render.plain : Render.styleFor(process.stdout, process.env),
      write: (text) => void process.stdout.write(text),
      live,
      columns: (process.stdout.columns ?? 0) >= 60 ? Math.min(process.stdout.columns, 110) : 100
    },
    flags.scenarios
  ).pipe(
    // Logs go to stderr, warnings and up only: stdout is the report (or the JSON lines).
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withLeveledConsole(Logger.logfmtLogger))),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
  // Without runMain's pretty logger, which would print log lines on stdout next to the report.
  NodeRuntime.runMain(program, { disablePrettyLogger: true })
}
