/**
 * Fixtures shared by the routing tests (scored selection, the routing spec's tests): targets with
 * registry classes, prices and verified quality, workflows of policy `route-v8` on segment
 * `extract`, a compiled workflow built by hand for `Router.score` / `Router.decide`, and the
 * gateway over scripted providers with the services a test picks.
 */
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { ModelTarget, TargetRef } from "@modelgate/core/ModelTarget"
import { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Layer, Schema } from "effect"
import { providers } from "./fixtures.js"

const decodeTarget = Schema.decodeSync(ModelTarget)
const decodeWorkflow = Schema.decodeSync(Workflow)

/** The three quality classes both routing suites use (strong: high, standard, fast: low). */
export const tierRefs = {
  strong: TargetRef.make("model://openai/strong@eu"),
  standard: TargetRef.make("model://anthropic/standard@eu"),
  fast: TargetRef.make("model://gemini/fast@eu")
}

/** A verified quality score (`ModelTarget.quality`) of eval `eval-3`. */
export const verified = (score: number) => ({ score, evalVersion: "eval-3", evaluatedAt: "2026-11-20" })

/**
 * A target with registry classes and prices (in, out per million): tools, a 128 K window and
 * 1000 output tokens unless `capabilities` says otherwise; region `eu`, data class `internal`
 * unless given; one attempt of at most 1 s.
 */
export const classedTarget = (
  ref: string,
  provider: string,
  fields: {
    readonly classes: typeof ModelTarget.Encoded.classes
    readonly price: readonly [number, number]
    readonly quality?: typeof ModelTarget.Encoded.quality
    readonly status?: "active" | "deprecated" | "disabled"
    readonly capabilities?: Partial<typeof ModelTarget.Encoded.capabilities>
    readonly regions?: readonly [string, ...Array<string>]
    readonly dataClasses?: readonly [string, ...Array<string>]
  }
) =>
  decodeTarget({
    ref,
    provider,
    model: ref.split("/")[3]!.split("@")[0]!,
    capabilities: { tools: true, contextWindow: 128_000, maxOutputTokens: 1000, ...fields.capabilities },
    regions: fields.regions ?? ["eu"],
    dataClasses: fields.dataClasses ?? ["internal"],
    pricing: { inputPerMillion: fields.price[0], outputPerMillion: fields.price[1], pricingVersion: "p-1" },
    limits: { maxAttempts: 1, perAttemptTimeout: 1000 },
    classes: fields.classes,
    ...(fields.quality ? { quality: fields.quality } : {}),
    ...(fields.status ? { status: fields.status } : {})
  })

/** A workflow of policy `route-v8` on segment `extract`, data class `internal`, 10 s, regions `eu` unless given. */
export const routingWorkflow = (
  fields: Partial<typeof Workflow.Encoded> & {
    readonly name: string
    readonly route: typeof Workflow.Encoded.route
  }
) =>
  decodeWorkflow({
    policyVersion: "route-v8",
    prompt: { id: "p", version: "1" },
    timeout: 10_000,
    regions: ["eu"],
    dataClass: "internal",
    segment: "extract",
    ...fields
  })

/** `targets` (refs `model://p<i>/m@eu`, provider `p<i>`) as one route; `fields` give prices, classes, status. */
export const generatedTargets = <A>(
  specs: ReadonlyArray<A>,
  fields: (
    spec: A
  ) => Pick<typeof ModelTarget.Encoded, "pricing" | "classes"> &
    Partial<Pick<typeof ModelTarget.Encoded, "quality" | "status">>
): ReadonlyArray<ModelTarget> =>
  specs.map((spec, i) =>
    decodeTarget({
      ref: `model://p${i}/m@eu`,
      provider: `p${i}`,
      model: "m",
      capabilities: { contextWindow: 128_000, maxOutputTokens: 1000 },
      regions: ["eu"],
      dataClasses: ["internal"],
      ...fields(spec)
    })
  )

/**
 * A scored workflow `name` over `targets` (in route order), compiled by hand for the router: no
 * schema, no adapters' allowlists.
 */
export const compiledScored = (
  name: string,
  targets: ReadonlyArray<ModelTarget>,
  fields: Partial<typeof Workflow.Encoded> = {}
): GatewayConfig.CompiledWorkflow => ({
  workflow: decodeWorkflow({
    name,
    prompt: { id: "p" },
    route: [targets[0]!.ref, ...targets.slice(1).map((t) => t.ref)],
    timeout: 10_000,
    regions: ["eu"],
    dataClass: "internal",
    selection: "scored",
    ...fields
  }),
  schema: undefined,
  decode: undefined,
  jsonSchema: undefined,
  features: new Set<string>(),
  targets,
  degrade: undefined,
  providerOptionAllowlists: new Map()
})

/** A definition of `targets` and `workflows`, with no output schemas. */
export const routingDefinition = (
  targets: ReadonlyArray<ModelTarget>,
  workflows: ReadonlyArray<Workflow>
): GatewayConfig.Definition => ({ config: GatewayConfig.GatewayConfig.make({ targets, workflows }), schemas: {} })

/** A breaker view with every breaker closed and no health records. */
export const closedBreakers = { isOpen: () => Effect.succeed(false) }

/**
 * The gateway of `definition` over scripted providers, with in-memory call records and the given
 * services (defaults: unlimited budgets, unbounded concurrency, no route health).
 */
export const routingGateway = (
  definition: GatewayConfig.Definition,
  scripts: ScriptedProvider.Scripts = {},
  services: {
    readonly budgets?: Layer.Layer<Budgets.Budgets, unknown>
    readonly concurrency?: Layer.Layer<Concurrency.Concurrency, unknown>
    readonly health?: Layer.Layer<Health.Health, unknown>
  } = {}
) =>
  ModelGateway.layer(definition).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(
      Layer.mergeAll(
        services.budgets ?? Budgets.layerOff,
        services.concurrency ?? Concurrency.layerOff,
        services.health ?? Health.layerOff,
        CallRecorder.layerMemory
      )
    ),
    Layer.orDie
  )

/** The refs of the scored-routing tests: the tiers plus a deprecated `old`. */
export const scoredRefs = { ...tierRefs, old: TargetRef.make("model://vllm/old@eu") }

/**
 * The targets of the scored-routing tests, fresh values each time (the deprecated warning is once
 * per target value): fast leads (0.675) just ahead of standard (0.6698).
 */
export const scoredTargets = () => [
  classedTarget(scoredRefs.strong, "openai", {
    classes: { quality: "high", latency: "slow", cost: "high" },
    price: [3, 12],
    quality: { extract: verified(0.93) }
  }),
  classedTarget(scoredRefs.standard, "anthropic", {
    classes: { quality: "standard", latency: "medium", cost: "medium" },
    price: [0.8, 3.2],
    quality: { extract: verified(0.78) }
  }),
  classedTarget(scoredRefs.fast, "gemini", {
    classes: { quality: "low", latency: "fast", cost: "low" },
    price: [0.1, 0.4]
  }),
  classedTarget(scoredRefs.old, "vllm", {
    classes: { quality: "high", latency: "medium" },
    price: [1, 4],
    status: "deprecated"
  })
]

/** The route of the scored-routing tests: every one of {@link scoredTargets}, strongest first. */
export const scoredRoute: readonly [TargetRef, ...Array<TargetRef>] = [
  scoredRefs.strong,
  scoredRefs.standard,
  scoredRefs.fast,
  scoredRefs.old
]
