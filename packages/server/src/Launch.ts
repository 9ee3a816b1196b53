/**
 * Builds a running server from a {@link ServerConfig}: the output schemas, the provider adapters,
 * the stores (memory, or Redis when `redis` is set, so several server processes share budgets,
 * permits, breakers and rate limits), the gateway (validated by core exactly as in-process), and
 * the HTTP server, whose `reload` takes a new configuration of the same file (all or nothing).
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as Gemini from "@modelgate/adapters/gemini"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import * as OpenAi from "@modelgate/adapters/openai"
import * as OpenAiCompatible from "@modelgate/adapters/openai-compatible"
import {
  Budgets,
  CallRecorder,
  Concurrency,
  type Errors,
  GatewayConfig,
  Health,
  ModelGateway,
  type ProviderAdapter,
  RateLimitStore
} from "@modelgate/core"
import { Context, Effect, Either, Layer, Redacted, Ref, type Schema, type Scope } from "effect"
import { restartProblems } from "./internal/restartFields.js"
import { fromJsonSchema } from "./JsonSchemaCodec.js"
import { makeKeyRing } from "./Keys.js"
import * as Observability from "./Observability.js"
import * as Server from "./Server.js"
import { type ProviderSpec, type ServerConfig, ServerConfigError } from "./ServerConfig.js"

/**
 * What the embedding program may add: adapters built in code (the dev default's mock), a recorder.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Extras {
  readonly adapters?: Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> | undefined
  /** Where CallRecords go; default from the configuration's `recorder`. */
  readonly recorder?: Layer.Layer<CallRecorder.CallRecorder> | undefined
  /** The budgets service (e.g. one a test holds), in place of the configuration's `budgets`. */
  readonly budgets?: Layer.Layer<Budgets.Budgets> | undefined
  /** Output schemas built in code, next to those of the file. */
  readonly schemas?: Readonly<Record<string, Schema.Schema.AnyNoContext>> | undefined
}

const adapterOf = (spec: ProviderSpec): Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> => {
  const key = spec.apiKeyEnv === undefined ? undefined : process.env[spec.apiKeyEnv]
  const options = { id: spec.id, baseUrl: spec.baseUrl, apiKey: key === undefined ? undefined : Redacted.make(key) }
  switch (spec.kind) {
    case "openai":
      return OpenAi.layer(options)
    case "openai-compatible":
      return OpenAiCompatible.layer(options)
    case "anthropic":
      return Anthropic.layer(options)
    case "gemini":
      return Gemini.layer(options)
  }
}

/** The output schemas of the file, or every problem with them. */
const schemasEither = (
  config: ServerConfig
): Either.Either<Record<string, Schema.Schema.AnyNoContext>, ReadonlyArray<string>> => {
  const schemas: Record<string, Schema.Schema.AnyNoContext> = {}
  const problems: Array<string> = []
  for (const [name, json] of Object.entries(config.schemas)) {
    const decoded = fromJsonSchema(name, json)
    if (Either.isRight(decoded)) schemas[name] = decoded.right
    else problems.push(...decoded.left)
  }
  return problems.length === 0 ? Either.right(schemas) : Either.left(problems)
}

const schemasOf = (config: ServerConfig) =>
  Either.match(schemasEither(config), {
    onLeft: (problems) => Effect.fail(new ServerConfigError({ problems })),
    onRight: Effect.succeed
  })

/** One problem per alias that names no workflow of `gatewayConfig`. */
const aliasProblems = (config: ServerConfig, gatewayConfig: GatewayConfig.GatewayConfig): ReadonlyArray<string> =>
  Object.entries(config.aliases)
    .filter(([, workflow]) => !gatewayConfig.workflows.some((w) => w.name === workflow))
    .map(([alias]) => `$.aliases.${alias} names no workflow`)

/** Core's problems as the server's (under `$.gateway`). */
const gatewayProblems = (error: Errors.GatewayConfigError): ReadonlyArray<string> =>
  error.problems.map((problem) => `$.gateway: ${problem.toString()}`)

/**
 * Everything of `next` checked before the gateway is touched: the fields that need a restart,
 * the output schemas, the gateway configuration (core's decoding) and the aliases, every problem
 * in one error.
 */
const checkReload = (running: ServerConfig, next: ServerConfig, extras: Extras) =>
  Effect.gen(function* () {
    const schemas = schemasEither(next)
    const decoded = yield* Effect.either(GatewayConfig.decode(next.gateway))
    const problems = [
      ...restartProblems(running, next),
      ...(Either.isLeft(schemas) ? schemas.left : []),
      ...Either.match(decoded, { onLeft: gatewayProblems, onRight: (config) => aliasProblems(next, config) })
    ]
    if (problems.length > 0 || Either.isLeft(schemas) || Either.isLeft(decoded))
      return yield* new ServerConfigError({ problems })
    return { gatewayConfig: decoded.right, schemas: { ...schemas.right, ...extras.schemas } }
  })

/**
 * The reload step of a server started from `current`: checks `next` ({@link checkReload}), reloads
 * the gateway on it (core validates it against the adapters and swaps it, or changes nothing),
 * then remembers it and gives the server's options over it for `Server.Running.reload` to swap in.
 */
const reloader =
  (current: Ref.Ref<ServerConfig>, gateway: ModelGateway.Service, extras: Extras) =>
  (next: ServerConfig): Effect.Effect<Server.Options, ServerConfigError> =>
    Effect.gen(function* () {
      const { gatewayConfig, schemas } = yield* checkReload(yield* Ref.get(current), next, extras)
      yield* gateway
        .reload({ config: gatewayConfig, schemas })
        .pipe(Effect.mapError((error) => new ServerConfigError({ problems: gatewayProblems(error) })))
      yield* Ref.set(current, next)
      return serverOptions(next, gatewayConfig)
    })

const noRecorder = Layer.succeed(CallRecorder.CallRecorder, { record: () => Effect.void })

/** Budgets, concurrency, health and rate limits, in memory or on Redis. */
const storesOf = (config: ServerConfig, extras: Extras) =>
  Effect.gen(function* () {
    const budgets = config.budgets === undefined ? undefined : yield* Budgets.decode(config.budgets)
    const budgetsLayer = (
      store: (options: Budgets.Options) => Layer.Layer<Budgets.Budgets, Errors.GatewayConfigError, never>
    ) => extras.budgets ?? (budgets === undefined ? Budgets.layerOff : store(budgets))
    const concurrency = config.concurrency === undefined ? undefined : yield* Concurrency.decode(config.concurrency)
    if (config.redis === undefined) {
      return Layer.mergeAll(
        budgetsLayer(Budgets.layerMemory),
        concurrency === undefined ? Concurrency.layerOff : Concurrency.layerMemory(concurrency),
        Health.layerMemory(),
        RateLimitStore.layerMemory
      )
    }
    const Redis = yield* Effect.promise(() => import("@modelgate/adapters/redis"))
    const stores = Redis.layer({ url: config.redis.url })
    return Layer.mergeAll(
      extras.budgets ?? (budgets === undefined ? Budgets.layerOff : Budgets.layer(budgets)),
      concurrency === undefined ? Concurrency.layerOff : Concurrency.layer(concurrency),
      Health.layer()
    ).pipe(Layer.provideMerge(stores))
  })

/**
 * The server's options for a configuration (its listen address, keys, aliases and limits) over
 * the gateway configuration decoded from it.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const serverOptions = (config: ServerConfig, gatewayConfig: GatewayConfig.GatewayConfig): Server.Options => ({
  host: config.listen.host,
  port: config.listen.port,
  keys: makeKeyRing(config.keys, config.aliases),
  aliases: config.aliases,
  limits: config.limits,
  metrics: config.metrics,
  gatewayConfig
})

/**
 * Starts the server of `config` in the current scope.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const start = (
  config: ServerConfig,
  extras: Extras = {}
): Effect.Effect<Server.Running, ServerConfigError | Errors.GatewayConfigError | Error, Scope.Scope> =>
  Effect.gen(function* () {
    const schemas = { ...(yield* schemasOf(config)), ...extras.schemas }
    const gatewayConfig = yield* GatewayConfig.decode(config.gateway)
    const unknownAliases = aliasProblems(config, gatewayConfig)
    if (unknownAliases.length > 0) return yield* new ServerConfigError({ problems: unknownAliases })
    // The configured providers send over the direct pooled `undici` transport (no HttpClient
    // request/response objects per call); adapters built in code keep the HttpClient.
    const transport = HttpTransport.layerUndici()
    const adapters = Layer.mergeAll(
      extras.adapters ?? Layer.empty,
      ...config.providers.map((spec) => adapterOf(spec).pipe(Layer.provide(transport)))
    ).pipe(Layer.provide(NodeHttpClient.layerUndici))
    const recorder = extras.recorder ?? (config.recorder === "none" ? noRecorder : CallRecorder.layerLog)
    const stores = yield* storesOf(config, extras)
    const gateway = ModelGateway.layer({ config: gatewayConfig, schemas }).pipe(
      Layer.provide(adapters),
      Layer.provideMerge(Layer.merge(stores, recorder)),
      Layer.provideMerge(Observability.layerOtlp)
    )
    const context = yield* Layer.build(gateway)
    const prepareReload = reloader(yield* Ref.make(config), Context.get(context, ModelGateway.ModelGateway), extras)
    return yield* Server.make({ ...serverOptions(config, gatewayConfig), prepareReload }).pipe(Effect.provide(context))
  })
