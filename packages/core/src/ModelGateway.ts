/**
 * The gateway: `generate` (and `stream`) for commands, built from a validated configuration and the
 * services it runs with (adapters, budgets, concurrency, health, call recorder).
 *
 * @since 0.1.0
 */
import { Context, Effect, Either, Layer, Schema } from "effect"
import { Stream } from "effect"
import { Budgets } from "./Budgets.js"
import * as CallRecorderModule from "./CallRecorder.js"
import { CallRecorder } from "./CallRecorder.js"
import * as ConcurrencyModule from "./Concurrency.js"
import { Concurrency } from "./Concurrency.js"
import { GatewayConfigError, type GatewayError, InvalidOutput } from "./Errors.js"
import * as GatewayConfig from "./GatewayConfig.js"
import * as HealthModule from "./Health.js"
import { Health } from "./Health.js"
import * as engine from "./internal/pipeline.js"
import { issuesOf } from "./internal/issues.js"
import * as streaming from "./internal/stream.js"
import type { ModelCommand } from "./ModelCommand.js"
import type * as StreamEvent from "./StreamEvent.js"
import type { ModelResult } from "./ModelResult.js"
import * as ProviderAdapter from "./ProviderAdapter.js"
import * as Router from "./Router.js"
import * as Telemetry from "./Telemetry.js"
import * as BudgetsModule from "./Budgets.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Runs one command to completion: route, reserve, attempts, validation, evidence. */
  readonly generate: (command: ModelCommand) => Effect.Effect<ModelResult, GatewayError>
  /**
   * Streams one command: `RouteSelected` per attempt, text and tool-call deltas from the first
   * delivered delta on (the commit point: no retry or fallback after it), then `UsageReported` and
   * `Final` with the envelope. Interrupting the consumer cancels the call.
   */
  readonly stream: (command: ModelCommand) => Stream.Stream<StreamEvent.StreamEvent, GatewayError>
  /** The router, for inspecting decisions without calling a provider. */
  readonly router: Router.Service
}

/**
 * @since 0.1.0
 * @category Context
 */
export class ModelGateway extends Context.Tag("@modelgate/core/ModelGateway")<ModelGateway, Service>() {}

/**
 * Validates the definition against itself and the adapters present in the context, then builds the
 * gateway. Fails with one `GatewayConfigError` listing every problem.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (definition: GatewayConfig.Definition) =>
  Effect.gen(function* () {
    const providers = new Set(definition.config.targets.map((t) => t.provider as string))
    const adapters = new Map<string, ProviderAdapter.ProviderAdapter>()
    for (const p of providers) {
      const found = yield* ProviderAdapter.find(p)
      if (found._tag === "Some") adapters.set(p, found.value)
    }
    const budgets = yield* Budgets
    // Every workflow timeout must be shorter than the budgets' reservation TTL (checked with the rest).
    const problems = GatewayConfig.validate(definition, new Set(adapters.keys()), {
      reservationTtl: budgets.reservationTtl
    })
    if (problems.length > 0) return yield* new GatewayConfigError({ problems })
    const workflows = GatewayConfig.compile(definition)
    const router = yield* Router.make(workflows)
    const ctx: engine.EngineContext = {
      router,
      adapters,
      budgets,
      concurrency: yield* Concurrency,
      recorder: yield* CallRecorder,
      health: yield* Health,
      telemetry: yield* Telemetry.TelemetrySettings
    }
    return ModelGateway.of({
      generate: (command) => engine.generate(ctx, command),
      stream: (command) => streaming.stream(ctx, command),
      router
    })
  })

/**
 * The gateway as a Layer. Needs the adapters of every provider in the config (see
 * `ProviderAdapter.layer`) plus `Budgets`, `Concurrency`, `Health` and `CallRecorder`
 * (`layerDefaults` gives unlimited / noop / log versions of those four).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (
  definition: GatewayConfig.Definition
): Layer.Layer<ModelGateway, GatewayConfigError, Budgets | Concurrency | Health | CallRecorder> =>
  Layer.effect(ModelGateway, make(definition))

/**
 * Unlimited budgets, unbounded concurrency, no breakers, records logged.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerDefaults: Layer.Layer<Budgets | Concurrency | Health | CallRecorder> = Layer.mergeAll(
  BudgetsModule.layerUnlimited,
  ConcurrencyModule.layerUnbounded,
  HealthModule.layerNoop,
  CallRecorderModule.layerLog
)

/**
 * Decodes the configuration from plain JSON first (all decode problems listed with their paths).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerJson = (
  json: unknown,
  code: Omit<GatewayConfig.Definition, "config"> = {}
): Layer.Layer<ModelGateway, GatewayConfigError, Budgets | Concurrency | Health | CallRecorder> =>
  Layer.effect(
    ModelGateway,
    Effect.flatMap(GatewayConfig.decode(json), (config) => make({ ...code, config }))
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
 * Runs `stream` with the gateway from the context.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const stream = (command: ModelCommand): Stream.Stream<StreamEvent.StreamEvent, GatewayError, ModelGateway> =>
  Stream.unwrap(Effect.map(ModelGateway, (g) => g.stream(command)))

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
      onLeft: (error) =>
        Effect.fail(
          new InvalidOutput({
            callId: result.evidence.callId,
            attempts: result.evidence.attempts,
            target: result.evidence.target,
            issues: issuesOf(error)
          })
        )
    })
  )
}
