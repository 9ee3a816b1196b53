/**
 * What the benchmarks run against: adapters written for measuring (instant, 1 KB JSON, hanging),
 * configurations with any number of targets, and a gateway built once over the real in-memory
 * Budgets and Concurrency layers.
 */
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { Usage } from "@modelgate/core/ModelResult"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Workflow } from "@modelgate/core/Workflow"
import { Deferred, Duration, Effect, Either, Layer, ManagedRuntime, Schema, Stream } from "effect"

const decodeTarget = Schema.decodeSync(ModelTarget)
const decodeWorkflow = Schema.decodeSync(Workflow)
const decodeCommand = Schema.decodeSync(ModelCommand)

/** The model the bench's mock server always answers with a retryable 503 (a primary that is down). */
export const downModel = "bench-down"

/**
 * A target of `provider`, eligible for every workflow below; `options` set its model (default
 * `bench-model`) and attempts on it (default 2).
 */
export const target = (
  ref: string,
  provider: string,
  options: { readonly model?: string; readonly maxAttempts?: number } = {}
): ModelTarget =>
  decodeTarget({
    ref,
    provider,
    model: options.model ?? "bench-model",
    capabilities: {
      tools: true,
      structuredOutput: { mode: "json_schema" },
      contextWindow: 128_000,
      maxOutputTokens: 4096
    },
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6, pricingVersion: "bench-1" },
    limits: { maxAttempts: options.maxAttempts ?? 2, perAttemptTimeout: 30_000, minimumAttemptTime: 100 }
  })

/** A workflow over `route`; `schema` names a structured-output schema of the definition. */
export const workflow = (name: string, route: ReadonlyArray<string>, schema?: string): Workflow =>
  decodeWorkflow({
    name,
    policyVersion: "bench-policy-1",
    prompt: { id: `${name}.prompt`, version: "1" },
    route: route as [string, ...Array<string>],
    timeout: 60_000,
    regions: ["eu"],
    dataClass: "internal",
    ...(schema !== undefined ? { output: { schema, schemaVersion: "1" } } : {})
  })

/** The structured output of the "classify" workflow. */
export const Classification = Schema.Struct({
  category: Schema.Literal("billing", "technical", "other"),
  confidence: Schema.Number,
  summary: Schema.String
})

/** The answer text of the mock provider server (the body is about 1 KB with the envelope). */
export const answerText =
  "Thanks for reaching out. I checked invoice INV-2026-11-0042 and the November amount includes a prorated " +
  "upgrade from the Team plan to the Business plan on the 14th. I have asked billing to send you an itemised copy " +
  "of the invoice, which should reach you within one business day. If anything still looks wrong after that, " +
  "reply to this message and I will open a billing dispute for you right away."

/** A typical short command: a system prompt and one user message. */
export const command = (workflowName: string, tenant = "acme"): ModelCommand =>
  decodeCommand({
    workflow: workflowName,
    tenant,
    messages: [
      { _tag: "system", content: "You are the support assistant of Acme. Answer briefly and politely." },
      { _tag: "user", content: "My invoice for November shows the wrong amount, can you check it?" }
    ]
  })

/** The provider request the engine would build for `command` at `target` (for direct adapter calls). */
export const requestFor = (cmd: ModelCommand, t: ModelTarget): ProviderAdapter.ProviderRequest => ({
  target: t,
  messages: cmd.messages,
  tools: [],
  toolChoice: undefined,
  output: undefined,
  maxOutputTokens: t.capabilities.maxOutputTokens,
  timeout: Duration.millis(30_000)
})

const usage = new Usage({ inputTokens: 42, outputTokens: 12 })

const noStream = (): Stream.Stream<ProviderAdapter.ProviderStreamEvent, ProviderError> =>
  Stream.make<Array<ProviderAdapter.ProviderStreamEvent>>({
    _tag: "Finish",
    finishReason: "stop",
    refusal: false,
    usage,
    modelVersion: "bench-model-1"
  })

/** The response of the instant adapter, built once: answering costs nothing but the Effect. */
export const instantResponse: ProviderAdapter.ProviderResponse = {
  text: "Thanks, I have forwarded your invoice to billing.",
  toolCalls: [],
  finishReason: "stop",
  refusal: false,
  usage,
  modelVersion: "bench-model-1",
  requestId: "req_bench",
  httpStatus: 200
}

/** An adapter that answers at once: `Effect.succeed(response)`, no timers. */
export const instantAdapter: Omit<ProviderAdapter.ProviderAdapter, "provider"> = {
  generate: () => Effect.succeed(instantResponse),
  stream: noStream
}

// ---------------------------------------------------------------------------------------------
// A realistic adapter: the wire body is a ~1 KB Chat Completions JSON, parsed and decoded per call.
// ---------------------------------------------------------------------------------------------

const WireResponse = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion"),
  created: Schema.Number,
  model: Schema.String,
  system_fingerprint: Schema.optional(Schema.NullOr(Schema.String)),
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.Number,
      message: Schema.Struct({
        role: Schema.Literal("assistant"),
        content: Schema.NullOr(Schema.String),
        refusal: Schema.optional(Schema.NullOr(Schema.String))
      }),
      logprobs: Schema.optional(Schema.Null),
      finish_reason: Schema.Literal("stop", "length", "tool_calls", "content_filter")
    })
  ),
  usage: Schema.Struct({
    prompt_tokens: Schema.Number,
    completion_tokens: Schema.Number,
    total_tokens: Schema.Number,
    prompt_tokens_details: Schema.optional(Schema.Struct({ cached_tokens: Schema.Number })),
    completion_tokens_details: Schema.optional(Schema.Struct({ reasoning_tokens: Schema.Number }))
  })
})
const decodeWire = Schema.decodeUnknownEither(WireResponse)

/** A Chat Completions body of about 1 KB whose message content is `content`. */
export const wireBody = (content: string): string => {
  const base = {
    id: "chatcmpl-bench0123456789abcdef",
    object: "chat.completion",
    created: 1_767_225_600,
    model: "bench-model-2026-01-01",
    system_fingerprint: "fp_bench01",
    choices: [
      { index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: "stop" }
    ],
    usage: {
      prompt_tokens: 42,
      completion_tokens: 180,
      total_tokens: 222,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 }
    }
  }
  const json = JSON.stringify(base)
  // Pad the content so the whole body is 1,024 bytes (ASCII).
  const pad = Math.max(0, 1024 - json.length)
  return JSON.stringify({
    ...base,
    choices: [{ ...base.choices[0]!, message: { ...base.choices[0]!.message, content: content + " ".repeat(pad) } }]
  })
}

export const proseBody = wireBody(
  "Thanks for reaching out. I checked invoice INV-2026-11-0042 and the November amount includes a prorated " +
    "upgrade from the Team plan to the Business plan on the 14th. I have asked billing to send you an itemised copy."
)

export const structuredBody = wireBody(
  JSON.stringify({
    category: "billing",
    confidence: 0.93,
    summary: "Customer disputes the November invoice amount; prorated plan upgrade likely explains it."
  })
)

/** An adapter that parses `body` (JSON.parse + Schema decode) into a response on every call. */
export const jsonAdapter = (body: string): Omit<ProviderAdapter.ProviderAdapter, "provider"> => ({
  generate: () =>
    Effect.suspend(() => {
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        return Effect.fail(new ProviderError({ kind: "invalid_output", processed: "maybe", detail: "not JSON" }))
      }
      const decoded = decodeWire(json)
      if (Either.isLeft(decoded)) {
        return Effect.fail(new ProviderError({ kind: "invalid_output", processed: "maybe", detail: "bad shape" }))
      }
      const wire = decoded.right
      const choice = wire.choices[0]!
      return Effect.succeed<ProviderAdapter.ProviderResponse>({
        text: choice.message.content ?? undefined,
        toolCalls: [],
        finishReason: choice.finish_reason,
        refusal: choice.message.refusal != null,
        usage: new Usage({
          inputTokens: wire.usage.prompt_tokens,
          cachedInputTokens: wire.usage.prompt_tokens_details?.cached_tokens ?? 0,
          outputTokens: wire.usage.completion_tokens,
          reasoningTokens: wire.usage.completion_tokens_details?.reasoning_tokens ?? 0
        }),
        modelVersion: wire.model,
        requestId: wire.id,
        httpStatus: 200
      })
    }),
  stream: noStream
})

/**
 * An adapter whose calls hang until `release` is completed; `entered` counts calls that reached
 * it (so a benchmark knows when every call is in flight).
 */
export const hangingAdapter = (
  release: Deferred.Deferred<void>,
  counter: { entered: number }
): Omit<ProviderAdapter.ProviderAdapter, "provider"> => ({
  generate: () =>
    Effect.suspend(() => {
      counter.entered++
      return Effect.as(Deferred.await(release), instantResponse)
    }),
  stream: noStream
})

// ---------------------------------------------------------------------------------------------
// Gateway stack
// ---------------------------------------------------------------------------------------------

/** A recorder that drops records: the sink is the application's choice and not measured here. */
export const recorderNoop: Layer.Layer<CallRecorder.CallRecorder> = Layer.succeed(
  CallRecorder.CallRecorder,
  CallRecorder.CallRecorder.of({ record: () => Effect.void })
)

/** The real in-memory Budgets (every tenant has its own account) and Concurrency layers. */
export const realServices = (permits: number) =>
  Layer.mergeAll(
    Budgets.layerMemory({ undeclaredTenants: { limit: 1_000_000, period: "monthly" } }),
    Concurrency.layerMemory({ permits }),
    Health.layerOff,
    recorderNoop
  )

export interface GatewayStack {
  readonly gateway: ModelGateway.Service
  readonly dispose: () => Promise<void>
}

/**
 * Builds a gateway over `adapters` (provider id → adapter) and the real services, once; calls run
 * with `Effect.runPromise(gateway.generate(cmd))`, exactly like direct adapter calls.
 */
export const buildGateway = async (options: {
  readonly targets: ReadonlyArray<ModelTarget>
  readonly workflows: ReadonlyArray<Workflow>
  readonly adapters: Readonly<Record<string, Omit<ProviderAdapter.ProviderAdapter, "provider">>>
  readonly schemas?: GatewayConfig.Definition["schemas"]
  readonly permits?: number
}): Promise<GatewayStack> => {
  const adapterLayers = Object.entries(options.adapters).map(([id, a]) => ProviderAdapter.layer(id, Effect.succeed(a)))
  const definition: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({ targets: options.targets, workflows: options.workflows }),
    schemas: options.schemas
  }
  const layer = ModelGateway.layer(definition).pipe(
    Layer.provide(Layer.mergeAll(realServices(options.permits ?? 20_000), ...adapterLayers))
  )
  const runtime = ManagedRuntime.make(layer)
  const gateway = await runtime.runPromise(ModelGateway.ModelGateway)
  return { gateway, dispose: () => runtime.dispose() }
}
