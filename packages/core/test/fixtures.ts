import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { ModelCommand, type TenantId } from "@modelgate/core/ModelCommand"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import { Clock, Effect, HashMap, Layer, Logger, Ref, Schema, TestClock } from "effect"
import type { ProviderResponse } from "@modelgate/core/ProviderAdapter"

export const Classification = Schema.Struct({
  category: Schema.Literal("billing", "technical", "other"),
  confidence: Schema.Number
})

export const refs = {
  primary: "model://openai/small@eu" as const,
  fallback: "model://anthropic/haiku@eu" as const,
  us: "model://gemini/flash@us" as const,
  strictLocal: "model://vllm/llama@eu" as const
}

const limits = { maxAttempts: 3, perAttemptTimeout: 400, minimumAttemptTime: 100 }

/** A target from its encoded (JSON) form. */
export const decodeTarget = Schema.decodeSync(ModelTarget)
/** A workflow from its encoded (JSON) form. */
export const decodeWorkflow = Schema.decodeSync(Workflow)

export const target = (
  ref: string,
  provider: string,
  options: {
    readonly regions?: readonly [string, ...Array<string>]
    readonly mode?: "json_schema" | "json_schema_strict" | "none"
    readonly features?: ReadonlyArray<"enum" | "pattern" | "anyOf">
    readonly tools?: boolean
    readonly dataClasses?: readonly [string, ...Array<string>]
    readonly status?: "active" | "disabled"
    readonly limits?: Partial<typeof limits>
    readonly contextWindow?: number
  } = {}
) =>
  decodeTarget({
    ref,
    provider,
    model: ref.split("/")[3]!.split("@")[0]!,
    capabilities: {
      vision: false,
      tools: options.tools ?? true,
      streaming: true,
      structuredOutput: {
        mode: options.mode ?? "json_schema",
        ...(options.features ? { supportedFeatures: options.features } : {})
      },
      contextWindow: options.contextWindow ?? 128_000,
      maxOutputTokens: 4096
    },
    regions: options.regions ?? ["eu"],
    dataClasses: options.dataClasses ?? ["public", "internal", "confidential"],
    pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6, currency: "USD", pricingVersion: "prices-2026-11" },
    limits: { ...limits, ...options.limits },
    status: options.status ?? "active"
  })

export const targets = [
  target(refs.primary, "openai", { mode: "json_schema_strict" }),
  target(refs.fallback, "anthropic"),
  target(refs.us, "gemini", { regions: ["us"] }),
  target(refs.strictLocal, "vllm", { mode: "json_schema_strict", features: ["enum"], tools: false })
]

export const workflow = (fields: Partial<typeof Workflow.Encoded> & { readonly name: string }) =>
  decodeWorkflow({
    policyVersion: "policy-7",
    prompt: { id: `${fields.name}.prompt`, version: "3" },
    route: [refs.primary, refs.fallback],
    timeout: 1000,
    regions: ["eu"],
    dataClass: "internal",
    ...fields
  })

export const workflows = [
  workflow({ name: "ticket.classify", output: { schema: "Classification", schemaVersion: "1" } }),
  workflow({ name: "ticket.reply" }),
  workflow({ name: "ticket.summarize", regions: ["eu", "us"], route: [refs.primary, refs.us] }),
  workflow({ name: "ticket.lenient", route: [refs.fallback, refs.strictLocal] }),
  workflow({
    name: "ticket.classifyDegraded",
    output: { schema: "Classification", schemaVersion: "1" },
    degrade: { _tag: "static", value: { category: "other", confidence: 0 } }
  })
]

export const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({ targets, workflows }),
  schemas: { Classification }
}

/** {@link definition} (its schemas) with other targets and workflows. */
export const definitionOf = (config: {
  readonly targets: ReadonlyArray<ModelTarget>
  readonly workflows: ReadonlyArray<Workflow>
}): GatewayConfig.Definition => ({ ...definition, config: GatewayConfig.GatewayConfig.make(config) })

/** A route decision's exclusions as `[target, reason]` pairs, in order. */
export const exclusionsOf = (decision: {
  readonly excluded: ReadonlyArray<{ readonly target: string; readonly reason: string }>
}): Array<readonly [string, string]> => decision.excluded.map((e) => [e.target, e.reason] as const)

/** A health record of `route` at 1,000 ms: closed breaker, no failures, 10 samples, unless `fields` say. */
export const routeHealth = (route: string, fields: Partial<Health.RouteHealth>) =>
  new Health.RouteHealth({ route, at: 1000, breaker: "closed", consecutiveFailures: 0, samples: 10, ...fields })

/** The tags of `events`, in order. */
export const tagsOf = (events: ReadonlyArray<{ readonly _tag: string }>): Array<string> => events.map((e) => e._tag)

export const providers = ["openai", "anthropic", "gemini", "vllm"]

/** A provider's plain answer (`ok`, stop, HTTP 200, no usage), with `over` on top. */
export const providerAnswer = (over: Partial<ProviderResponse> = {}): ProviderResponse => ({
  text: "ok",
  toolCalls: [],
  finishReason: "stop",
  refusal: false,
  usage: undefined,
  modelVersion: undefined,
  requestId: undefined,
  httpStatus: 200,
  ...over
})

/** The gateway's services with budgets, concurrency and health off, and in-memory records. */
export const servicesOff = Layer.mergeAll(
  Budgets.layerOff,
  Concurrency.layerOff,
  Health.layerOff,
  CallRecorder.layerMemory
)

/** The gateway's services counting: in-memory budgets (acme's `limit`), four permits, health off, in-memory records. */
export const servicesCounting = (limit: number) =>
  Layer.mergeAll(
    Budgets.layerMemory({ tenants: { acme: { limit } } }),
    Concurrency.layerMemory({ permits: 4 }),
    Health.layerOff,
    CallRecorder.layerMemory
  )

/** The gateway's services with a budget: in-memory budgets (acme's `limit`), concurrency and health off, in-memory records. */
export const servicesBudgeted = (limit: number) =>
  Layer.mergeAll(
    Budgets.layerMemory({ tenants: { acme: { limit } } }),
    Concurrency.layerOff,
    Health.layerOff,
    CallRecorder.layerMemory
  )

/** The gateway over scripted providers and `services`. */
const scriptedGateway = <ROut, E>(
  scripts: ScriptedProvider.Scripts,
  def: GatewayConfig.Definition,
  services: Layer.Layer<ROut, E>
) =>
  ModelGateway.layer(def).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(services)
  )

/** The gateway over scripted providers, unlimited budgets, in-memory records. */
export const gatewayLayer = (scripts: ScriptedProvider.Scripts, def: GatewayConfig.Definition = definition) =>
  scriptedGateway(scripts, def, servicesOff)

/** {@link gatewayLayer} with acme's budget limited to `limit` ({@link servicesBudgeted}): every input is counted. */
export const budgetedGateway = (scripts: ScriptedProvider.Scripts, def: GatewayConfig.Definition, limit: number) =>
  scriptedGateway(scripts, def, servicesBudgeted(limit))

/**
 * Provides {@link gatewayLayer} whose primary target answers `primary` and, when given, whose
 * fallback answers `fallback`, each in order.
 */
export const onRoutes = (
  primary: ReadonlyArray<ScriptedProvider.Outcome>,
  fallback?: ReadonlyArray<ScriptedProvider.Outcome>
) =>
  Effect.provide(
    gatewayLayer(
      fallback === undefined ? { [refs.primary]: primary } : { [refs.primary]: primary, [refs.fallback]: fallback }
    )
  )

const decodeCommand = Schema.decodeSync(ModelCommand)

export const command = (workflowName: string, extra: Partial<typeof ModelCommand.Encoded> = {}) =>
  decodeCommand({
    workflow: workflowName,
    tenant: "acme",
    messages: [
      { _tag: "system", content: "You classify support tickets." },
      { _tag: "user", content: "My invoice is wrong" }
    ],
    ...extra
  })

/**
 * The gateway whose primary target answers at once (`after: 0`) with `answer` (the stream tests'
 * setup), plus `more` scripts for other targets.
 */
export const primaryAnswers = (
  answer: Omit<Parameters<typeof ScriptedProvider.success>[0], "after">,
  more: ScriptedProvider.Scripts = {}
) => gatewayLayer({ [refs.primary]: [ScriptedProvider.success({ after: 0, ...answer })], ...more })

/**
 * The event tags of a plain (free-text) stream of three chunks that serves on its first route: the
 * route, its commit, the deltas, the usage at the end, the result.
 */
export const threeChunkStreamTags = [
  "RouteSelected",
  "RouteCommitted",
  "TextDelta",
  "TextDelta",
  "TextDelta",
  "UsageUpdate",
  "UsageReported",
  "Final"
]

/** Scripts whose answers fail the `Classification` schema on both routes of `ticket.classify`. */
export const invalidOnEveryRoute: ScriptedProvider.Scripts = {
  [refs.primary]: [ScriptedProvider.success({ after: 40, value: { category: "shipping", confidence: 2 } })],
  [refs.fallback]: [ScriptedProvider.invalidJson({ after: 30 })]
}

/** A conversation holding an image (for vision exclusion). */
export const imageMessages = [
  { _tag: "system", content: "You read receipts." },
  {
    _tag: "user",
    content: [
      { _tag: "text", text: "What is the total on this receipt?" },
      { _tag: "image", url: "https://example.com/receipt.png" }
    ]
  }
] as const

/** A tool definition (for tool-support exclusion). */
export const lookupTool = { name: "lookup", description: "Looks up an order.", parameters: { type: "object" } }

/** `[label, acquiredAt]` of each permit job, in the order the permits came. */
export type PermitLog = Ref.Ref<ReadonlyArray<readonly [string, number]>>

/** An empty {@link PermitLog}. */
export const makePermitLog: Effect.Effect<PermitLog> = Ref.make<ReadonlyArray<readonly [string, number]>>([])

/**
 * Forks a job of workflow `wf` that holds a permit of `tenant` (the `Concurrency` in the context) for
 * `holdMs` virtual millis, and logs `[label, acquiredAt]` when it gets the permit.
 */
export const permitJob = (log: PermitLog, tenant: TenantId, wf: string, label: string, holdMs: number) =>
  Effect.fork(
    Concurrency.withPermit(
      tenant,
      wf
    )(
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(log, (all) => [...all, [label, now] as const])
        yield* Effect.sleep(holdMs)
      })
    )
  )

/** Lets `ms` of virtual time pass, then reads the {@link PermitLog}: the permits granted by then, in order. */
export const grantsAfter = (log: PermitLog, ms: number) => Effect.zipRight(TestClock.adjust(ms), Ref.get(log))

/** A logger that keeps level, message and annotations of every entry, and the layer adding it. */
export const capturingLogger = () => {
  const logs: Array<readonly [string, string, object]> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    logs.push([
      logLevel.label,
      Array.isArray(message) ? message.join(" ") : String(message),
      Object.fromEntries(HashMap.toEntries(annotations))
    ])
  })
  return { logs, layer: Logger.add(logger) }
}

/** A valid target as plain JSON (for decoding tests). */
export const plainTarget = {
  ref: "model://openai/small@eu",
  provider: "openai",
  model: "small",
  capabilities: { contextWindow: 128000, maxOutputTokens: 4096 },
  regions: ["eu"],
  dataClasses: ["internal"],
  pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6, pricingVersion: "p1" },
  limits: { maxAttempts: 2, perAttemptTimeout: 1000, minimumAttemptTime: 100 }
}

/** A valid workflow over {@link plainTarget} as plain JSON. */
export const plainWorkflow = {
  name: "ticket.reply",
  policyVersion: "v1",
  prompt: { id: "p", version: "1" },
  route: ["model://openai/small@eu"],
  timeout: 3000,
  regions: ["eu"],
  dataClass: "internal"
}
