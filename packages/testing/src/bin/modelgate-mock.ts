#!/usr/bin/env node
/**
 * `modelgate-mock`: the mock provider server in its own process (see `MockServe`). Prints its base
 * URL on the first line, serves until Ctrl-C.
 *
 * @since 0.2.0
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Option } from "effect"
import * as MockServe from "../MockServe.js"

const main = Effect.flatMap(
  MockServe.parse(process.argv.slice(2)),
  Option.match({
    onNone: () => Console.log(MockServe.usage),
    onSome: (options) => MockServe.serve(options, (line) => Console.log(line))
  })
).pipe(
  Effect.catchAll((problem) =>
    Effect.zipRight(
      Console.error(typeof problem === "string" ? problem : `modelgate-mock: ${problem.message}`),
      Effect.sync(() => {
        process.exitCode = 2
      })
    )
  )
)

NodeRuntime.runMain(main, { disablePrettyLogger: true })
