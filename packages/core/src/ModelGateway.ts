/**
 * The gateway: `generate` (and `stream`, and `embed` for embedding workflows) for commands, built
 * from a validated configuration and the services it runs with (adapters, budgets, concurrency,
 * health, call recorder).
 *
 * @since 0.1.0
 */
import { Context, Effect, Either, Layer, type ParseResult, Schema } from "effect"
import { Stream } from "effect"
import { Budgets } from "./Budgets.js"
import * as CallRecorderModule from "./CallRecorder.js"
import { CallRecorder } from "./CallRecorder.js"
import * as ConcurrencyModule from "./Concurrency.js"
import { Concurrency } from "./Concurrency.js"
import { type GatewayConfigError, type GatewayError, InvalidOutput } from "./Errors.js"
import * as GatewayConfig from "./GatewayConfig.js"
import * as HealthModule from "./Health.js"
import { Health } from "./Health.js"
import * as engine from "./internal/pipeline.js"
import { makeHooks } from "./internal/lifecycleHooks.js"
import { type Builder, prepare } from "./internal/prepareConfig.js"
import * as Report from "./internal/telemetry.js"
import * as CanaryController from "./CanaryController.js"
import * as QualitySignals from "./QualitySignals.js"
import * as RateLimitStore from "./RateLimitStore.js"
import * as Shadow from "./Shadow.js"
import { fromContextOr, optionalServices, responseCacheOrMemory } from "./internal/gatewayServices.js"
import * as embedding from "./internal/embed.js"
import type * as Embeddings from "./Embeddings.js"
import { issuesOf } from "./internal/issues.js"
import * as streaming from "./internal/stream.js"
import type { ModelCommand } from "./ModelCommand.js"
import * as ModelCommandModule from "./ModelCommand.js"
import type * as StreamEvent from "./StreamEvent.js"
import type { ModelResult } from "./ModelResult.js"
import * as RouterEngine from "./internal/router/engine.js"
import type * as Router from "./Router.js"
import * as Telemetry from "./Telemetry.js"
import * as BudgetsModule from "./Budgets.js"
import { type CatalogueIds, type CatalogueOptions, catalogueConfig } from "./internal/catalogueGateway.js"
import type { WorkflowName } from "./Workflow.js"
import * as Literals from "./internal/literals.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Runs one command to completion: route, reserve, attempts, validation, evidence. */
  readonly generate: (command: ModelCommand) => Effect.Effect<ModelResult, GatewayError>
  /**
   * Streams one command: `RouteSelected` per attempt, `RouteCommitted` then deltas from the commit
   * point on (no retry or fallback after it), `UsageUpdate`s (tokens, cost) as usage is reported,
   * then `UsageReported` and `Final`. Interrupting the consumer cancels the call.
   */
  readonly stream: (command: ModelCommand) => Stream.Stream<StreamEvent.StreamEvent, GatewayError>
  /**
   * Embeds the command's inputs with an embedding workflow (`Workflow.embedding`): one vector per
   * input, in order, from one target of the workflow's vector space, with the routing, deadline,
   * budget, breakers, retries, fallback (within the space only), evidence and CallRecord of `generate`.
   */
  readonly embed: (command: Embeddings.EmbedCommand) => Effect.Effect<Embeddings.EmbeddingResult, GatewayError>
  /** The router of the running configuration, for inspecting decisions without calling a provider. */
  readonly router: Router.Service
  /**
   * Validates a whole new configuration exactly like startup (one `GatewayConfigError` listing every
   * problem) and swaps it in atomically: calls already started finish on the configuration they
   * started with, later calls run on the new one. A rejected reload changes nothing. Reloads run
   * one at a time. Returns the version the evidence of later calls records.
   */
  readonly reload: (source: ReloadSource) => Effect.Effect<ConfigVersion, GatewayConfigError>
  /** The version of the running configuration. */
  readonly configVersion: Effect.Effect<ConfigVersion>
  /**
   * A caller's verdict on the answer of call `callId` (a workflow with a `quality` policy):
   * `{ accepted: false }` counts against its target's quality. `false` when the call is unknown.
   */
  readonly feedback: (callId: string, feedback: QualitySignals.Feedback) => Effect.Effect<boolean>
  /** The canary controller the gateway's canaries with a `rollout` run under. */
  readonly canaries: CanaryController.Service
  /** The quality signals the gateway's workflows with a `quality` policy read. */
  readonly quality: QualitySignals.Service
}

/**
 * The version of a configuration, recorded in each call's evidence (`configVersion`): the one
 * supplied with it, else `cfg_` and a short hash of its encoded form.
 *
 * @since 0.2.0
 * @category Models
 */
export type ConfigVersion = string

/**
 * A configuration to reload: a definition, or JSON in the shape `GatewayConfig.Encoded` (decoded
 * first, all problems listed) with the schemas and degrade handlers of the running configuration
 * unless `code` is given. `version` names it in evidence (default: a hash of the encoded config).
 *
 * @since 0.2.0
 * @category Models
 */
export type ReloadSource =
  | (GatewayConfig.Definition & { readonly version?: string | undefined })
  | {
      readonly json: unknown
      readonly code?: Omit<GatewayConfig.Definition, "config"> | undefined
      readonly version?: string | undefined
    }

/**
 * @since 0.1.0
 * @category Context
 */
export class ModelGateway extends Context.Tag("@modelgate/core/ModelGateway")<ModelGateway, Service>() {}

/**
 * Validates the definition against itself and the adapters present in the context, then builds the
 * gateway. Fails with one `GatewayConfigError` listing every problem. `options.version` names the
 * configuration in evidence (default: a hash of it, see {@link ConfigVersion}); later ones come
 * with `reload`. Needs {@link Services} and {@link OptionalServices} (which {@link layer} builds).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (
  definition: GatewayConfig.Definition,
  options?: { readonly version?: string | undefined }
): Effect.Effect<Service, GatewayConfigError, Services | OptionalServices> =>
  Effect.gen(function* () {
    // Adapters are those of the context the gateway is built in, for this configuration and reloads.
    const built = yield* Effect.context<never>()
    const budgets = yield* Budgets
    const health = yield* Health
    const canaries = yield* CanaryController.CanaryController
    const quality = yield* QualitySignals.QualitySignals
    const shadowRecorder = yield* Shadow.ShadowRecorder
    const hooks = makeHooks({
      controller: canaries,
      quality,
      shadow: Shadow.makeRunner({
        adapter: (provider) => ctx.adapters.get(provider),
        budgets,
        recorder: shadowRecorder,
        // Read when a shadow call starts (the engine context is built below).
        concurrency: () => ctx.concurrency,
        rateLimits: () => ctx.rateLimits
      })
    })
    const builder: Builder = {
      built,
      reservationTtl: budgets.reservationTtl,
      health,
      canaries,
      routerState: RouterEngine.makeState(hooks),
      versionPins: new Map()
    }
    const first = yield* prepare(builder, definition, options?.version, undefined)
    // Only ever added to: a call in flight keeps the adapters of the configuration it started on.
    const adapters = new Map(first.adapters)
    const concurrency = yield* Concurrency
    const ctx: engine.EngineContext = {
      live: { current: first.live },
      adapters,
      ...engine.admissionServices(budgets, concurrency),
      recorder: yield* CallRecorder,
      health,
      callIds: engine.makeCallIds(),
      routeView: engine.routeViewOf(health, concurrency),
      telemetry: yield* Telemetry.TelemetrySettings,
      metricLabels: Report.makeMetricLabels(),
      lifecycle: hooks,
      rateLimits: yield* RateLimitStore.RateLimitStore,
      cache: yield* responseCacheOrMemory
    }
    let running = first.definition
    const oneAtATime = yield* Effect.makeSemaphore(1)
    const reload = (source: ReloadSource): Effect.Effect<ConfigVersion, GatewayConfigError> =>
      oneAtATime.withPermits(1)(
        Effect.gen(function* () {
          const def: GatewayConfig.Definition =
            "json" in source
              ? {
                  schemas: (source.code ?? running).schemas,
                  degradeHandlers: (source.code ?? running).degradeHandlers,
                  config: yield* GatewayConfig.decode(source.json)
                }
              : source
          const next = yield* prepare(builder, def, source.version, ctx.live.current.router.workflows)
          // All or nothing: one assignment, after everything was validated and compiled.
          for (const [p, adapter] of next.adapters) adapters.set(p, adapter)
          ctx.live.current = next.live
          running = next.definition
          yield* Effect.annotateLogs(Effect.logInfo("modelgate: configuration reloaded"), {
            configVersion: next.live.version
          })
          return next.live.version
        })
      )
    return ModelGateway.of({
      generate: (command) => engine.generate(ctx, command),
      stream: (command) => streaming.stream(ctx, command),
      embed: (command) => embedding.embed(ctx, command),
      get router() {
        return ctx.live.current.router
      },
      reload,
      configVersion: Effect.sync(() => ctx.live.current.version),
      feedback: quality.feedback,
      canaries,
      quality
    })
  })

/**
 * The gateway as a Layer. Needs its {@link Services} (provide each, or pipe through
 * {@link withDefaults}) and builds its {@link OptionalServices}. Adapters are found in the context by
 * the providers the configuration names (`ProviderAdapter.layer`); a missing one is a
 * `GatewayConfigError`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (definition: GatewayConfig.Definition): Layer.Layer<ModelGateway, GatewayConfigError, Services> =>
  Layer.effect(ModelGateway, make(definition)).pipe(Layer.provide(optionalServices))

/**
 * The four services a gateway runs with besides its adapters.
 *
 * @since 0.2.0
 * @category Models
 */
export type Services = Budgets | Concurrency | Health | CallRecorder

/**
 * Services with a default, which {@link layer} builds when the context has none: the rate-limit store
 * (`RateLimitStore.layerMemory`), a canary controller and quality signals of its own, `Shadow.layerLog`.
 *
 * @since 0.2.0
 * @category Models
 */
export type OptionalServices =
  | RateLimitStore.RateLimitStore
  | CanaryController.CanaryController
  | QualitySignals.QualitySignals
  | Shadow.ShadowRecorder

/**
 * The services {@link withDefaults} provides, each an explicit choice. A service left out is taken
 * from the context the result is built in when one is there, else it is the default:
 * `Budgets.layerOff`, `Concurrency.layerOff`, `Health.layerOff`, `CallRecorder.layerLog`.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Defaults<EB, RB, EC, RC, EH, RH, ER, RR> {
  readonly budgets?: Layer.Layer<Budgets, EB, RB> | undefined
  readonly concurrency?: Layer.Layer<Concurrency, EC, RC> | undefined
  readonly health?: Layer.Layer<Health, EH, RH> | undefined
  readonly recorder?: Layer.Layer<CallRecorder, ER, RR> | undefined
}

/**
 * Provides a gateway layer (`layer` / `layerJson`, or one with its adapters already provided) with
 * its four services: those given here, and for each one left out the service already in the context
 * the result is built in, else the default (unlimited budgets, unbounded concurrency, no breakers,
 * one log line per call). A function over the gateway's layer, not a layer of services, so it cannot
 * be merged next to a user's `Budgets` layer and shadow it: a budget provided in any order — passed
 * here, provided to the gateway before this, or provided to the result after it — is the one enforced.
 *
 * ```ts
 * const GatewayLive = ModelGateway.layer({ config, schemas }).pipe(
 *   ModelGateway.withDefaults({ budgets: Budgets.layerMemory({ tenants: { acme: { limit: 5 } } }) }),
 *   Layer.provide(OpenAi.layerConfig())
 * )
 * ```
 *
 * @since 0.2.0
 * @category Layers
 */
export const withDefaults =
  <EB = never, RB = never, EC = never, RC = never, EH = never, RH = never, ER = never, RR = never>(
    services: Defaults<EB, RB, EC, RC, EH, RH, ER, RR> = {}
  ) =>
  <A, E, R>(
    self: Layer.Layer<A, E, R>
  ): Layer.Layer<A, E | EB | EC | EH | ER, Exclude<R, Services> | RB | RC | RH | RR> => {
    const budgets: Layer.Layer<Budgets, EB, RB> = services.budgets ?? fromContextOr(Budgets, BudgetsModule.layerOff)
    const concurrency: Layer.Layer<Concurrency, EC, RC> =
      services.concurrency ?? fromContextOr(Concurrency, ConcurrencyModule.layerOff)
    const health: Layer.Layer<Health, EH, RH> = services.health ?? fromContextOr(Health, HealthModule.layerOff)
    const recorder: Layer.Layer<CallRecorder, ER, RR> =
      services.recorder ?? fromContextOr(CallRecorder, CallRecorderModule.layerLog)
    return Layer.provide(self, Layer.mergeAll(budgets, concurrency, health, recorder))
  }

/**
 * Decodes the configuration from plain JSON first (all decode problems listed with their paths).
 * `json` has the shape `GatewayConfig.Encoded` (durations in milliseconds, targets written out or
 * naming a `Catalogue` entry); write it with `GatewayConfig.make` for completion and type errors.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerJson = (
  json: unknown,
  code: Omit<GatewayConfig.Definition, "config"> = {}
): Layer.Layer<ModelGateway, GatewayConfigError, Services> =>
  Layer.effect(
    ModelGateway,
    Effect.flatMap(GatewayConfig.decode(json), (config) => make({ ...code, config }))
  ).pipe(Layer.provide(optionalServices))

/**
 * Runs `reload` with the gateway from the context.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const reload = (source: ReloadSource): Effect.Effect<ConfigVersion, GatewayConfigError, ModelGateway> =>
  Effect.flatMap(ModelGateway, (g) => g.reload(source))

/**
 * Runs `feedback` with the gateway from the context: a caller's verdict on the answer of `callId`.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const feedback = (
  callId: string,
  verdict: QualitySignals.Feedback
): Effect.Effect<boolean, never, ModelGateway> => Effect.flatMap(ModelGateway, (g) => g.feedback(callId, verdict))

/**
 * Applies each configuration of `source`, in order, with `reload`, until the stream ends. A rejected
 * one is skipped and logged with its problem count (never its values); the running configuration
 * stays. A failure of the stream itself ends the watch with a warning.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const reloadFrom = <E, R>(
  source: Stream.Stream<ReloadSource, E, R>
): Effect.Effect<void, never, ModelGateway | R> =>
  Effect.flatMap(ModelGateway, (g) =>
    Stream.runForEach(source, (next) =>
      Effect.catchAll(Effect.asVoid(g.reload(next)), (error) =>
        Effect.annotateLogs(Effect.logWarning("modelgate: configuration reload rejected"), {
          problems: error.problems.length
        })
      )
    ).pipe(Effect.catchAll(() => Effect.logWarning("modelgate: configuration source failed; reloads stopped")))
  )

/**
 * A gateway layer (`layer`, `layerJson`) that also watches `source` for new configurations: runs
 * {@link reloadFrom} in the layer's scope, so the watch stops when the layer is released.
 *
 * ```ts
 * const GatewayLive = ModelGateway.layerJson(initial).pipe(
 *   ModelGateway.reloadingFrom(Stream.map(configFileChanges, (json) => ({ json }))),
 *   ModelGateway.withDefaults()
 * )
 * ```
 *
 * @since 0.2.0
 * @category Layers
 */
export const reloadingFrom =
  <E2, R2>(source: Stream.Stream<ReloadSource, E2, R2>) =>
  <E, R>(self: Layer.Layer<ModelGateway, E, R>): Layer.Layer<ModelGateway, E, R | Exclude<R2, ModelGateway>> =>
    Layer.provide(
      Layer.scoped(
        ModelGateway,
        Effect.flatMap(ModelGateway, (g) => Effect.as(Effect.forkScoped(reloadFrom(source)), g))
      ),
      self
    )

/**
 * Runs `generate` with the gateway from the context.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const generate = (command: ModelCommand): Effect.Effect<ModelResult, GatewayError, ModelGateway> =>
  Effect.flatMap(ModelGateway, (g) => g.generate(command))

/**
 * Runs `embed` with the gateway from the context.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const embed = (
  command: Embeddings.EmbedCommand
): Effect.Effect<Embeddings.EmbeddingResult, GatewayError, ModelGateway> =>
  Effect.flatMap(ModelGateway, (g) => g.embed(command))

/**
 * Runs `stream` with the gateway from the context.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const stream = (command: ModelCommand): Stream.Stream<StreamEvent.StreamEvent, GatewayError, ModelGateway> =>
  Stream.unwrap(Effect.map(ModelGateway, (g) => g.stream(command)))

/** The `InvalidOutput` of a result whose value failed the caller's schema (paths only, never values). */
const invalidOutputOf = (result: ModelResult, error: ParseResult.ParseError): InvalidOutput =>
  new InvalidOutput({
    callId: result.evidence.callId,
    attempts: result.evidence.attempts,
    target: result.evidence.target,
    issues: issuesOf(error)
  })

/**
 * Runs `generate` for a workflow with structured output and returns its value typed by `schema`
 * (the workflow's output schema, or one its values satisfy), next to the envelope. A value that
 * does not satisfy `schema` — e.g. the workflow answered in text or in another schema — fails with
 * `InvalidOutput` (paths only, never values).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const generateObject = <A, I>(
  command: ModelCommand,
  schema: Schema.Schema<A, I>
): Effect.Effect<{ readonly value: A; readonly result: ModelResult }, GatewayError, ModelGateway> => {
  const validate = Schema.validateEither(schema, { errors: "all" })
  return Effect.flatMap(generate(command), (result) =>
    Either.match(validate(result.content.value), {
      onRight: (value) => Effect.succeed({ value, result }),
      onLeft: (error) => Effect.fail(invalidOutputOf(result, error))
    })
  )
}

/**
 * A workflow of the configuration seen from code: its name and the schema of its structured output,
 * so results carry the schema's type. The configuration still names the schema (`output.schema`,
 * supplied in `schemas`); the handle's schema validates each value at the call.
 *
 * @since 0.2.0
 * @category Models
 */
export interface TypedWorkflow<A, I = A> {
  readonly name: WorkflowName
  readonly schema: Schema.Schema<A, I>
}

/**
 * Registers the configuration written in code, so that {@link workflow} accepts only its workflow
 * names (a misspelled name does not compile):
 *
 * ```ts
 * const config = GatewayConfig.make({ targets: [...], workflows: [{ name: "ticket.classify", ... }] })
 * declare module "@modelgate/core/ModelGateway" {
 *   interface Register { readonly config: typeof config }
 * }
 * ```
 *
 * Unregistered (a configuration read from JSON), any name type-checks and is checked at the call.
 *
 * @since 0.2.0
 * @category Models
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by the user's module augmentation
export interface Register {}

/**
 * The workflow names {@link workflow} accepts: the registered configuration's, else any string.
 *
 * @since 0.2.0
 * @category Models
 */
export type RegisteredWorkflowName = Register extends { readonly config: infer C }
  ? GatewayConfig.WorkflowNames<C>
  : string

/**
 * A typed handle on the workflow `name` (throws at definition when `name` is not a workflow name;
 * with a registered configuration, see {@link Register}, a name it does not define does not compile).
 *
 * ```ts
 * const classify = ModelGateway.workflow("ticket.classify", Ticket)
 * const { value } = yield* ModelGateway.generateWith(classify, { tenant: "acme", messages })
 * value.category // "billing" | "technical" | "other"
 * ```
 *
 * @since 0.2.0
 * @category Constructors
 */
export const workflow = <A, I>(name: RegisteredWorkflowName, schema: Schema.Schema<A, I>): TypedWorkflow<A, I> => ({
  name: Literals.WorkflowName.make(name),
  schema
})

/**
 * The fields of a command for a typed workflow: a `ModelCommand` in its encoded (JSON) form,
 * without `workflow`.
 *
 * @since 0.2.0
 * @category Models
 */
export type CommandInput = Omit<typeof ModelCommandModule.ModelCommand.Encoded, "workflow">

/**
 * Runs `generate` for a typed workflow: decodes `input` as a command of `handle`'s workflow
 * (`ModelCommand.decodeUnknown`: unknown fields and broken limits are a `ParseError`), then returns
 * the value typed and validated by the handle's schema, as {@link generateObject} does
 * (`InvalidOutput` when it does not satisfy it).
 *
 * @since 0.2.0
 * @category Accessors
 */
export const generateWith = <A, I>(
  handle: TypedWorkflow<A, I>,
  input: CommandInput
): Effect.Effect<
  { readonly value: A; readonly result: ModelResult },
  GatewayError | ParseResult.ParseError,
  ModelGateway
> =>
  Effect.flatMap(ModelCommandModule.decodeUnknown({ ...input, workflow: handle.name }), (command) =>
    generateObject(command, handle.schema)
  )

/**
 * The last event of a typed stream: the envelope and its value, typed and validated by the
 * handle's schema.
 *
 * @since 0.2.0
 * @category Models
 */
export interface TypedFinal<A> {
  readonly _tag: "Final"
  readonly result: ModelResult
  readonly value: A
}

/**
 * Runs `stream` for a typed workflow: the events of {@link stream}, with `Final` carrying the
 * value typed and validated by the handle's schema (`InvalidOutput` ends the stream when it does
 * not satisfy it). `PartialObject` values stay untyped: they are not validated.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const streamWith = <A, I>(
  handle: TypedWorkflow<A, I>,
  input: CommandInput
): Stream.Stream<
  Exclude<StreamEvent.StreamEvent, StreamEvent.Final> | TypedFinal<A>,
  GatewayError | ParseResult.ParseError,
  ModelGateway
> => {
  const validate = Schema.validateEither(handle.schema, { errors: "all" })
  const typed = (
    event: StreamEvent.StreamEvent
  ): Effect.Effect<Exclude<StreamEvent.StreamEvent, StreamEvent.Final> | TypedFinal<A>, InvalidOutput> => {
    if (event._tag !== "Final") return Effect.succeed(event)
    const result = event.result
    return Either.match(validate(result.content.value), {
      onRight: (value): Effect.Effect<TypedFinal<A>, InvalidOutput> => Effect.succeed({ _tag: "Final", result, value }),
      onLeft: (error) => Effect.fail(invalidOutputOf(result, error))
    })
  }
  return Stream.unwrap(
    Effect.map(ModelCommandModule.decodeUnknown({ ...input, workflow: handle.name }), (command) =>
      Stream.mapEffect(stream(command), typed)
    )
  )
}

/** @since 0.2.0 */
export type { CatalogueOptions }

/**
 * A gateway over catalogue models with safe defaults, for a first program: one target per id
 * (`model://openai/gpt-4.1-mini`, the catalogue's figures) and one text workflow, `"chat"`,
 * routing over them in order (fallback along the ids only). Defaults never widen policy: regions
 * `"unspecified"` (a command asking for a region is refused), data class `"public"`, a 30 s
 * deadline and a 1 024-token output cap; the services are {@link withDefaults}'s. Provide the
 * adapters, which read their keys and base URLs from the environment (`OpenAi.layerConfig()`:
 * `OPENAI_API_KEY`, `OPENAI_BASE_URL`).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerCatalogue = (
  ids: CatalogueIds,
  options?: CatalogueOptions
): Layer.Layer<ModelGateway, GatewayConfigError> => withDefaults()(layerJson(catalogueConfig(ids, options)))
