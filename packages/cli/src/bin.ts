#!/usr/bin/env node
/**
 * The `modelgate` executable: `Cli.run` on the process's arguments, exit code from `ExitCode`.
 *
 * @since 0.2.0
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as Cli from "./Cli.js"

Cli.run(process.argv).pipe(
  Effect.catchTag("ExitCode", (exit) =>
    Effect.sync(() => {
      process.exitCode = exit.code
    })
  ),
  Effect.provide(NodeContext.layer),
  (main) => NodeRuntime.runMain(main, { disablePrettyLogger: true })
)
