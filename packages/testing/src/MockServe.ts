/**
 * The mock provider server as a process any client can use: what the `modelgate-mock` bin (and
 * `modelgate mock`) runs. It listens on 127.0.0.1, answers all the wire formats of
 * `MockProviderServer` (OpenAI Chat Completions and Responses, Anthropic Messages, Gemini,
 * OpenAI-compatible; embeddings too) with the behaviours of a JSON script (`MockScript`) and of
 * flags, and prints on its first line its base URL: the OpenAI one, for `OPENAI_BASE_URL`. The next
 * lines give each SDK's variable:
 *
 * ```text
 * http://127.0.0.1:4010/v1
 * OPENAI_BASE_URL=http://127.0.0.1:4010/v1
 * ANTHROPIC_BASE_URL=http://127.0.0.1:4010
 * GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:4010
 * OPENAI_COMPATIBLE_BASE_URL=http://127.0.0.1:4010/compat/v1
 * ```
 *
 * It serves until interrupted (Ctrl-C). No key is checked; requests are not kept (a long-running
 * mock holds no growing log).
 *
 * @since 0.2.0
 */
import type { HttpServerError } from "@effect/platform"
import { Effect, Either, Option, type Scope } from "effect"
import * as Fs from "node:fs/promises"
import { parseArgs } from "node:util"
import { make as makeServer, type Service } from "./MockProviderServer.js"
import * as MockScript from "./MockScript.js"

/**
 * What to serve.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Options extends MockScript.Flags {
  /** Port on 127.0.0.1. Default 0: a free port, printed. */
  readonly port?: number | undefined
  /** A JSON script file (`MockScript`). */
  readonly script?: string | undefined
}

/**
 * The lines printed when the server listens: the OpenAI base URL first, then one `NAME=url` line
 * per SDK variable.
 *
 * @since 0.2.0
 * @category Getters
 */
export const banner = (mock: Pick<Service, "url" | "baseUrl">): ReadonlyArray<string> => [
  mock.baseUrl("openai"),
  `OPENAI_BASE_URL=${mock.baseUrl("openai")}`,
  `ANTHROPIC_BASE_URL=${mock.url}`,
  `GOOGLE_GEMINI_BASE_URL=${mock.url}`,
  `OPENAI_COMPATIBLE_BASE_URL=${mock.baseUrl("openai-compatible")}`
]

/**
 * Reads and decodes the script of `options` (none: an empty script) and applies the flags.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const scriptOf = (options: Options): Effect.Effect<MockScript.Script, string> =>
  Effect.map(
    options.script === undefined
      ? Effect.succeed<MockScript.Script>({ queues: [] })
      : Effect.flatMap(
          Effect.tryPromise({
            try: () => Fs.readFile(options.script ?? "", "utf8"),
            catch: (e) => `cannot read the script ${options.script}: ${e instanceof Error ? e.message : String(e)}`
          }),
          (text) =>
            Effect.flatMap(
              Effect.try({
                try: (): unknown => JSON.parse(text),
                catch: () => `the script ${options.script} is not JSON`
              }),
              MockScript.decode
            )
        ),
    (script) => MockScript.withFlags(script, options)
  )

/**
 * Starts the server in the current scope with the script and flags of `options`, and hands the
 * {@link banner} lines to `print` once it listens. Returns the running server.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const start = (
  options: Options,
  print: (line: string) => Effect.Effect<void>
): Effect.Effect<Service, string | HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function* () {
    const script = yield* scriptOf(options)
    const mock = yield* makeServer({
      port: options.port ?? 0,
      record: false,
      ...(script.default === undefined ? {} : { defaultBehavior: script.default })
    })
    for (const queue of script.queues) {
      yield* mock.enqueue(queue.behaviors, {
        ...(queue.provider === undefined ? {} : { provider: queue.provider }),
        ...(queue.model === undefined ? {} : { model: queue.model })
      })
    }
    yield* Effect.forEach(banner(mock), print, { discard: true })
    return mock
  })

/**
 * {@link start}, then serves until interrupted.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const serve = (
  options: Options,
  print: (line: string) => Effect.Effect<void>
): Effect.Effect<never, string | HttpServerError.ServeError> =>
  Effect.scoped(Effect.zipRight(start(options, print), Effect.never))

/**
 * The usage text of the bin.
 *
 * @since 0.2.0
 * @category Constants
 */
export const usage = `usage: modelgate-mock [--port N] [--script file.json] [--text TEXT]
                      [--fail STATUS | --drop] [--times N] [--retry-after SECONDS] [--latency MS]

Serves the modelgate mock provider (OpenAI chat and Responses, Anthropic, Gemini,
OpenAI-compatible) on 127.0.0.1 and prints its base URL (OPENAI_BASE_URL) on the first line.
  --port N              port (default: a free one)
  --script FILE         JSON script: { "default": behaviour, "queues": [{ "provider", "model", "behaviors" }] }
  --text TEXT           the text of every success
  --fail STATUS         answer with this HTTP status and the provider's error body
  --drop                close the connection before answering
  --times N             only the first N requests get the fault (default: all)
  --retry-after SECONDS retry-after header of failures
  --latency MS          delay before every answer`

/** An integer flag within its range (absent: `undefined`), or the problem. */
const integer = (
  name: string,
  value: string | undefined,
  min: number,
  max: number
): Either.Either<number | undefined, string> => {
  if (value === undefined) return Either.right(undefined)
  const n = Number(value)
  return Number.isInteger(n) && n >= min && n <= max
    ? Either.right(n)
    : Either.left(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`)
}

/**
 * Parses the bin's arguments: the options, `"help"` for `--help`, or the problem (with the usage).
 *
 * @since 0.2.0
 * @category Constructors
 */
export const parse = (argv: ReadonlyArray<string>): Effect.Effect<Option.Option<Options>, string> =>
  Effect.gen(function* () {
    const { values } = yield* Effect.try({
      try: () =>
        parseArgs({
          args: [...argv],
          strict: true,
          allowPositionals: false,
          options: {
            port: { type: "string" },
            script: { type: "string" },
            text: { type: "string" },
            fail: { type: "string" },
            drop: { type: "boolean" },
            times: { type: "string" },
            "retry-after": { type: "string" },
            latency: { type: "string" },
            help: { type: "boolean", short: "h" }
          }
        }),
      catch: (e) => `${e instanceof Error ? e.message : String(e)}\n\n${usage}`
    })
    if (values.help === true) return Option.none()
    const checks = [
      integer("port", values.port, 0, 65_535),
      integer("fail", values.fail, 400, 599),
      integer("times", values.times, 1, 1_000_000),
      integer("retry-after", values["retry-after"], 0, 86_400),
      integer("latency", values.latency, 0, 600_000)
    ] as const
    const problems = checks.flatMap((c) => (Either.isLeft(c) ? [c.left] : []))
    if (values.drop === true && values.fail !== undefined) problems.push("--fail and --drop are exclusive")
    if (problems.length > 0) return yield* Effect.fail(`${problems.join("\n")}\n\n${usage}`)
    const [port, fail, times, retryAfter, latencyMs] = checks.map((c) => Either.getOrUndefined(c))
    return Option.some({
      ...(port === undefined ? {} : { port }),
      ...(values.script === undefined ? {} : { script: values.script }),
      ...(values.text === undefined ? {} : { text: values.text }),
      ...(fail === undefined ? {} : { fail }),
      ...(values.drop === true ? { drop: true } : {}),
      ...(times === undefined ? {} : { times }),
      ...(retryAfter === undefined ? {} : { retryAfter }),
      ...(latencyMs === undefined ? {} : { latencyMs })
    })
  })
