/**
 * `serve`: runs the server on the embedded default (`DevDefault`: mock provider, memory stores,
 * a fresh dev key) or, with `--config <file>`, on a JSON configuration (`ServerConfig`). Prints as
 * its first line `modelgate server listening on http://127.0.0.1:<port>/v1 (dev key: <key>)` (the
 * dev default) or `modelgate server listening on http://<host>:<port>/v1` (a configuration).
 * SIGINT / SIGTERM drain in-flight calls within `limits.shutdownGraceMs`, then exit. SIGHUP
 * re-reads the `--config` file and reloads the server on it, all or nothing (`Server.Running.reload`);
 * the outcome is logged to stderr (the dev default has no file: SIGHUP logs that).
 *
 * Flags: `--config <file>`, `--port <n>` (the dev default's port; default 8787, 0 picks one).
 *
 * @since 0.1.0
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Logger, Queue } from "effect"
import { readFileSync } from "node:fs"
import * as DevDefault from "./DevDefault.js"
import { generateKey } from "./Keys.js"
import * as Launch from "./Launch.js"
import type * as Server from "./Server.js"
import * as ServerConfig from "./ServerConfig.js"

const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}

const waitForSignal = (server: Server.Running) =>
  Effect.async<void>((resume) => {
    const stop = () => resume(Effect.void)
    process.once("SIGINT", stop)
    process.once("SIGTERM", stop)
  }).pipe(Effect.zipRight(server.shutdown))

/** The configuration in the file at `path`: readable JSON, decoded. */
const readConfig = (path: string) =>
  Effect.try({
    try: () => JSON.parse(readFileSync(path, "utf8")) as unknown,
    catch: () => new ServerConfig.ServerConfigError({ problems: [`${path} is not readable JSON`] })
  }).pipe(Effect.flatMap(ServerConfig.decode))

/**
 * Runs `onHangup` for each SIGHUP in the current scope, its logs to stderr. The handler is in place
 * when this returns; SIGHUPs arriving during a run make one more run (a sliding queue of one).
 */
const onEachHangup = <E>(onHangup: Effect.Effect<void, E>) =>
  Effect.gen(function* () {
    const queue = yield* Queue.sliding<void>(1)
    const offer = () => void Queue.unsafeOffer(queue, undefined)
    yield* Effect.acquireRelease(
      Effect.sync(() => process.on("SIGHUP", offer)),
      () => Effect.sync(() => process.off("SIGHUP", offer))
    )
    yield* Effect.forkScoped(
      Effect.forever(Effect.zipRight(Queue.take(queue), Effect.ignore(onHangup))).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.stringLogger)))
      )
    )
  })

/** Reads the file again and reloads `server` on it; a file that cannot be read or decoded is a rejected reload. */
const reloadFrom = (path: string, server: Server.Running) =>
  readConfig(path).pipe(
    Effect.tapError((error) =>
      Effect.annotateLogs(Effect.logWarning("modelgate server: configuration reload rejected"), {
        problems: error.problems.join("; ")
      })
    ),
    Effect.flatMap(server.reload)
  )

const fromFile = (path: string) =>
  Effect.gen(function* () {
    const config = yield* readConfig(path)
    const server = yield* Launch.start(config)
    yield* onEachHangup(reloadFrom(path, server))
    process.stdout.write(`modelgate server listening on ${server.url}/v1\n`)
    yield* waitForSignal(server)
  })

const dev = Effect.gen(function* () {
  const key = process.env.MODELGATE_DEV_KEY ?? generateKey()
  const port = Number(flag("--port") ?? process.env.PORT ?? 8787)
  const { server } = yield* DevDefault.start({ key, port })
  yield* onEachHangup(Effect.logWarning("modelgate server: SIGHUP: nothing to reload (no --config file)"))
  process.stdout.write(`modelgate server listening on ${server.url}/v1 (dev key: ${key})\n`)
  yield* waitForSignal(server)
})

const configPath = flag("--config")
const program = configPath === undefined ? dev : fromFile(configPath)

NodeRuntime.runMain(
  Effect.scoped(program).pipe(
    Effect.tapErrorCause((cause) =>
      Effect.sync(() => {
        process.stderr.write(`modelgate server failed to start: ${cause.toString().split("\n")[0]}\n`)
      })
    )
  ),
  { disableErrorReporting: true }
)
