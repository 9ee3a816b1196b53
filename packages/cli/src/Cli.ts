/**
 * The `modelgate` command line (`@effect/cli`):
 *
 * - `modelgate check <config.json>`: every startup problem of a configuration file, each with what
 *   to change (`Check`); exit code 1 when there is one.
 * - `modelgate explain <config.json> <request.json> [--json] [--stream]`: the route decision for one request,
 *   without calling any provider (`Explain`); exit code 1 when the request is refused or invalid.
 * - `modelgate mock [--port N] [--script file.json] [--fail STATUS | --drop] [--times N] …`: serves
 *   the mock provider and prints its base URL first (`@modelgate/testing/MockServe`).
 *
 * The configuration file is the gateway's JSON plus stand-ins for code (`ConfigFile`).
 *
 * @since 0.2.0
 */
import { Args, Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import * as MockServe from "@modelgate/testing/MockServe"
import { Console, Context, Data, Effect, Option } from "effect"
import * as Check from "./Check.js"
import * as Explain from "./Explain.js"

/**
 * Where the commands write their report, one line at a time. Default: `Console.log` (tests provide
 * their own to read it).
 *
 * @since 0.2.0
 * @category Context
 */
export class Output extends Context.Reference<Output>()("@modelgate/cli/Output", {
  defaultValue: (): { readonly line: (text: string) => Effect.Effect<void> } => ({ line: (text) => Console.log(text) })
}) {}

/**
 * A command finished with a non-zero exit code (its report is already written).
 *
 * @since 0.2.0
 * @category Errors
 */
export class ExitCode extends Data.TaggedError("ExitCode")<{ readonly code: number }> {}

const print = (lines: ReadonlyArray<string>) =>
  Effect.flatMap(Output, (out) => Effect.forEach(lines, out.line, { discard: true }))

/** A file's text; unreadable, the command ends with exit code 2 after saying why. */
const readText = (path: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(path)).pipe(
    Effect.catchAll((error) =>
      Effect.zipRight(print([`cannot read ${path}: ${error.message}`]), new ExitCode({ code: 2 }))
    )
  )

const configArg = Args.file({ name: "config.json" }).pipe(
  Args.withDescription("the gateway configuration: GatewayConfig's JSON plus schemas, handler names and adapters")
)

const check = Command.make("check", { config: configArg }, ({ config }) =>
  Effect.gen(function* () {
    const result = yield* Check.check(config, yield* readText(config))
    yield* print(Check.render(config, result))
    if (result.problems.length > 0) return yield* new ExitCode({ code: 1 })
  })
).pipe(Command.withDescription("List every problem that would stop the gateway from starting, with its fix."))

const explain = Command.make(
  "explain",
  {
    config: configArg,
    request: Args.file({ name: "request.json" }).pipe(
      Args.withDescription("one request: a ModelCommand in JSON (workflow, tenant, messages, …)")
    ),
    json: Options.boolean("json").pipe(Options.withDescription("print the RouteDecision as JSON")),
    stream: Options.boolean("stream").pipe(Options.withDescription("decide as for ModelGateway.stream"))
  },
  ({ config, request, json, stream }) =>
    Effect.gen(function* () {
      const texts = { config: yield* readText(config), request: yield* readText(request) }
      const result = yield* Explain.explain(
        { config, request },
        texts.config,
        texts.request,
        stream ? "stream" : "generate"
      )
      yield* print(Explain.render(result, json))
      if (result._tag !== "Decided") return yield* new ExitCode({ code: 1 })
    })
).pipe(Command.withDescription("Print the route decision for a request, without calling any provider."))

const optionalInteger = (name: string, description: string) =>
  Options.integer(name).pipe(Options.withDescription(description), Options.optional)

const mock = Command.make(
  "mock",
  {
    port: optionalInteger("port", "port on 127.0.0.1 (default: a free one)"),
    script: Options.file("script").pipe(
      Options.withDescription(
        'JSON script: { "default": behaviour, "queues": [{ "provider", "model", "behaviors" }] }'
      ),
      Options.optional
    ),
    text: Options.text("text").pipe(Options.withDescription("the text of every success"), Options.optional),
    fail: optionalInteger("fail", "answer with this HTTP status and the provider's error body"),
    drop: Options.boolean("drop").pipe(Options.withDescription("close the connection before answering")),
    times: optionalInteger("times", "only the first N requests get the fault (default: all)"),
    retryAfter: optionalInteger("retry-after", "retry-after header of failures, in seconds"),
    latency: optionalInteger("latency", "delay before every answer, in milliseconds")
  },
  (flags) => {
    const options: MockServe.Options = {
      port: Option.getOrUndefined(flags.port),
      script: Option.getOrUndefined(flags.script),
      text: Option.getOrUndefined(flags.text),
      fail: Option.getOrUndefined(flags.fail),
      drop: flags.drop,
      times: Option.getOrUndefined(flags.times),
      retryAfter: Option.getOrUndefined(flags.retryAfter),
      latencyMs: Option.getOrUndefined(flags.latency)
    }
    return Effect.flatMap(Output, (out) => MockServe.serve(options, out.line)).pipe(
      Effect.catchAll((problem) =>
        Effect.zipRight(
          print([typeof problem === "string" ? problem : `cannot serve: ${problem.message}`]),
          new ExitCode({ code: 2 })
        )
      )
    )
  }
).pipe(
  Command.withDescription(
    "Serve the mock provider (OpenAI chat and Responses, Anthropic, Gemini, OpenAI-compatible); prints OPENAI_BASE_URL first."
  )
)

/**
 * The `modelgate` command and its subcommands.
 *
 * @since 0.2.0
 * @category Commands
 */
export const command = Command.make("modelgate").pipe(
  Command.withDescription(
    "modelgate: check a gateway configuration, explain a route decision, serve the mock provider."
  ),
  Command.withSubcommands([check, explain, mock])
)

/**
 * Runs the CLI on `argv` (as `process.argv`: the first two entries are skipped).
 *
 * @since 0.2.0
 * @category Commands
 */
export const run = Command.run(command, { name: "modelgate", version: "0.2.0" })
