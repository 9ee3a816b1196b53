/**
 * The configuration file the `modelgate` CLI reads: the gateway's JSON configuration
 * (`GatewayConfig.Encoded`, exactly what `ModelGateway.layerJson` decodes) plus what an application
 * gives in code, written as data:
 *
 * ```json
 * {
 *   "targets": [...],
 *   "workflows": [...],
 *   "schemas": { "Ticket": { "type": "object", "properties": { ... }, "required": [...] } },
 *   "degradeHandlers": ["classifyByKeywords"],
 *   "escalationChecks": [],
 *   "adapters": { "vllm-eu": "openai-compatible" }
 * }
 * ```
 *
 * - `schemas`: the output schemas workflows name (`output.schema`), each as the JSON Schema the
 *   gateway derives from the Effect Schema (`JSONSchema.make(Ticket)`). An Effect Schema is code and
 *   cannot be JSON; its JSON Schema is what startup validation checks (schema features against
 *   each target's structured-output mode, strict-mode rules), so the CLI checks the same things.
 *   Free-text workflows need none.
 * - `degradeHandlers`, `escalationChecks`: the names of those the application supplies in code.
 * - `adapters`: which built-in adapter serves a provider id (`openai`, `anthropic`, `gemini`,
 *   `openai-compatible`), or `custom` for one of the application's own. Omitted, a provider id
 *   that names a built-in adapter is served by it; any other id has no adapter (`NO_ADAPTER`).
 *
 * @since 0.2.0
 */
import { GatewayConfig } from "@modelgate/core"
import { ConfigProblem } from "@modelgate/core/Errors"
import { Effect, Either, ParseResult, Schema } from "effect"

/**
 * The built-in adapters a provider id can be served by, and `custom` for the application's own.
 *
 * @since 0.2.0
 * @category Schemas
 */
export const AdapterKind = Schema.Literal("openai", "anthropic", "gemini", "openai-compatible", "custom")
/** @since 0.2.0 */
export type AdapterKind = typeof AdapterKind.Type

/**
 * The fields the file adds to the gateway's configuration.
 *
 * @since 0.2.0
 * @category Schemas
 */
export const Extras = Schema.Struct({
  schemas: Schema.optionalWith(
    Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }),
    {
      default: () => ({})
    }
  ),
  degradeHandlers: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  escalationChecks: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  adapters: Schema.optionalWith(Schema.Record({ key: Schema.String, value: AdapterKind }), { default: () => ({}) })
})
/** @since 0.2.0 */
export type Extras = typeof Extras.Type

const extraKeys = ["schemas", "degradeHandlers", "escalationChecks", "adapters"] as const

/**
 * A configuration file, decoded: the gateway's definition (schemas, handlers and checks standing
 * in for the application's code) and the adapter serving each provider id of its targets.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Loaded {
  readonly definition: GatewayConfig.Definition
  /** Per provider id of the targets: the adapter that serves it (absent: none). */
  readonly adapters: ReadonlyMap<string, AdapterKind>
}

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const builtIn = (id: string): AdapterKind | undefined =>
  id === "openai" || id === "anthropic" || id === "gemini" || id === "openai-compatible" ? id : undefined

/** Problems of the file's own fields, with their paths. */
const extrasProblems = (error: ParseResult.ParseError): ReadonlyArray<ConfigProblem> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map(
    (issue) =>
      new ConfigProblem({
        path: issue.path
          .map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))
          .join("")
          .replace(/^\./, ""),
        reason: "INVALID_CLI_FIELD",
        detail: issue.message
      })
  )

/**
 * A stand-in for an output schema the file gives as JSON Schema: accepts any value (the CLI never
 * validates an answer) and derives exactly that JSON Schema, so startup validation checks it as it
 * checks the application's Effect Schema.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const schemaFromJsonSchema = (jsonSchema: Readonly<Record<string, unknown>>): Schema.Schema<unknown> =>
  Schema.Unknown.annotations({ jsonSchema: { ...jsonSchema } })

/**
 * Decodes a parsed file: the gateway configuration (every problem `GatewayConfig.decode` lists)
 * and the file's own fields. Fails with every problem found.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const decode = (json: unknown): Effect.Effect<Loaded, ReadonlyArray<ConfigProblem>> =>
  Effect.gen(function* () {
    if (!isRecord(json)) {
      return yield* Effect.fail([
        new ConfigProblem({ path: "$", reason: "NOT_AN_OBJECT", detail: "the file must hold one JSON object" })
      ])
    }
    const config: Record<string, unknown> = {}
    const extras: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(json)) {
      if ((extraKeys as ReadonlyArray<string>).includes(key)) extras[key] = value
      else config[key] = value
    }
    const decodedExtras = Schema.decodeUnknownEither(Extras, { errors: "all", onExcessProperty: "error" })(extras)
    const decodedConfig = yield* Effect.either(GatewayConfig.decode(config))
    const problems = [
      ...(Either.isLeft(decodedConfig) ? decodedConfig.left.problems : []),
      ...(Either.isLeft(decodedExtras) ? extrasProblems(decodedExtras.left) : [])
    ]
    if (Either.isLeft(decodedConfig) || Either.isLeft(decodedExtras)) return yield* Effect.fail(problems)
    const file = decodedExtras.right
    const gateway = decodedConfig.right
    const adapters = new Map<string, AdapterKind>()
    for (const target of gateway.targets) {
      const kind = Object.hasOwn(file.adapters, target.provider)
        ? file.adapters[target.provider]
        : builtIn(target.provider)
      if (kind !== undefined) adapters.set(target.provider, kind)
    }
    return {
      definition: {
        config: gateway,
        schemas: Object.fromEntries(Object.entries(file.schemas).map(([name, js]) => [name, schemaFromJsonSchema(js)])),
        // Never run: the CLI calls no provider, so no call degrades or escalates.
        degradeHandlers: Object.fromEntries(file.degradeHandlers.map((name) => [name, () => Effect.void])),
        escalationChecks: Object.fromEntries(file.escalationChecks.map((name) => [name, () => false]))
      },
      adapters
    }
  })

/**
 * Reads and parses a JSON file; a missing or unparsable file is one problem naming it.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const readJson = (path: string, text: string): Either.Either<unknown, ReadonlyArray<ConfigProblem>> =>
  Either.try({
    try: (): unknown => JSON.parse(text),
    catch: (e) => [
      new ConfigProblem({
        path: "$",
        reason: "NOT_JSON",
        detail: `${path} is not JSON: ${e instanceof Error ? e.message : String(e)}`
      })
    ]
  })
