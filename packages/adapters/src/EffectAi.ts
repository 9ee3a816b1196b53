/**
 * `@effect/ai` (0.37) interop, both ways.
 *
 * **`@effect/ai` served by modelgate** — {@link languageModel} provides `LanguageModel.LanguageModel`
 * from the `ModelGateway`, so code written against `LanguageModel.generateText`, `generateObject`
 * and `streamText` (with its `Toolkit`) runs through a workflow's routing, fallback, deadline, budget
 * and evidence:
 *
 * - the prompt becomes the command's messages (system, user text and images, assistant text and
 *   tool calls, tool results as JSON); the toolkit's tools become tool definitions (parameters as
 *   JSON Schema, `sideEffecting` unless annotated `Tool.Readonly`); `toolChoice` carries over.
 *   `@effect/ai` resolves the tool calls with the toolkit's handlers after the gateway answers.
 * - the answer becomes response parts: `response-metadata` (the call id and model), text, tool
 *   calls, and `finish` with the reason, the usage and the call's evidence
 *   (`metadata.modelgate.evidence`, read it with {@link evidence}).
 * - a gateway failure becomes an `AiError` whose `cause` is the typed modelgate error (read it with
 *   {@link gatewayError}): `InvalidRequest` → `MalformedInput`, `InvalidOutput` → `MalformedOutput`,
 *   every other error (`Refusal`, `RateLimited`, `ProviderUnavailable`, `BudgetExceeded`, …) →
 *   `UnknownError` whose description starts with the error's tag.
 * - **Per-call schemas.** `generateObject({ schema })` is served only by a workflow that declares an
 *   output schema, and only when the call's schema is the declared one (the same schema or AST) or
 *   has the same JSON Schema (keys sorted; `title`, `description`, `examples`, `$comment` and
 *   `default` ignored). Otherwise the call fails before any provider is called, with
 *   `MalformedInput` whose cause is a {@link SchemaMismatch}: the gateway constrains and validates
 *   output with the workflow's schema, so a different per-call schema could be neither requested
 *   from the provider nor trusted. `generateText` and `streamText` on a structured workflow return
 *   its JSON text.
 *
 * **`@effect/ai` providers used by modelgate** — {@link providerAdapter} turns a provider's
 * `LanguageModel` layer (e.g. `@effect/ai-openai`'s, which speaks the OpenAI Responses API) into a
 * modelgate `ProviderAdapter`, and classifies its `AiError`s into `ProviderError`s (HTTP status,
 * body codes, `retry-after`), so that retries, retry-after hints, fallbacks and breakers work.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import * as EffectAi from "@modelgate/adapters/effect-ai"
 *
 * const ModelLive = EffectAi.languageModel({ workflow: "ticket.reply", tenant: "acme" })
 * const program = LanguageModel.generateText({ prompt: "Hello" }).pipe(Effect.provide(ModelLive))
 * ```
 *
 * @since 0.2.0
 */
import type { Response } from "@effect/ai"
import { type AiError, LanguageModel, Telemetry, Tool } from "@effect/ai"
import { HttpClient } from "@effect/platform"
import { GatewayError } from "@modelgate/core/Errors"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import type { CommandInput } from "@modelgate/core/ModelGateway"
import { ModelGateway } from "@modelgate/core/ModelGateway"
import { Evidence } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import * as ToolLoop from "@modelgate/core/ToolLoop"
import type { ProviderRequest, ProviderResponse, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import type { Redacted, Scope } from "effect"
import { Clock, Context, Effect, Either, Layer, Option, Predicate, Schema, Stream } from "effect"
import { responseToEvents } from "./internal/adapter.js"
import * as Echo from "./internal/echo.js"
import { classifyAiError } from "./internal/effectAi/classify.js"
import { messagesFromPrompt, toolChoiceFromEffectAi, toolFromEffectAi } from "./internal/effectAi/prompt.js"
import { responsesCompat } from "./internal/effectAi/responsesCompat.js"
import { mismatch } from "./internal/effectAi/schemaCheck.js"
import * as Served from "./internal/effectAi/languageModel.js"
import * as Used from "./internal/effectAi/providerAdapter.js"

// =============================================================================
// Errors and accessors
// =============================================================================

/**
 * A `generateObject` call whose schema the workflow cannot serve: the workflow declares no output
 * schema, or a different one. Raised before any provider is called, as the cause of an
 * `AiError.MalformedInput` (read it with {@link schemaMismatch}).
 *
 * @since 0.2.0
 * @category Errors
 */
export class SchemaMismatch extends Schema.TaggedError<SchemaMismatch>()("SchemaMismatch", {
  workflow: Schema.String,
  reason: Schema.Literal("no_output_schema", "different_schema"),
  detail: Schema.String
}) {
  override get message(): string {
    return `generateObject schema not served by workflow ${this.workflow} (${this.reason}): ${this.detail}`
  }
}

const isGatewayError = Schema.is(GatewayError)

/**
 * The typed modelgate error an `AiError` of {@link languageModel} carries as its `cause`
 * (`Refusal`, `RateLimited`, `ProviderUnavailable`, `BudgetExceeded`, …), or `undefined`.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const gatewayError = (error: unknown): GatewayError | undefined => {
  const cause = Predicate.hasProperty(error, "cause") ? error.cause : undefined
  return isGatewayError(cause) ? cause : undefined
}

/**
 * The {@link SchemaMismatch} an `AiError` carries as its `cause`, or `undefined`.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const schemaMismatch = (error: unknown): SchemaMismatch | undefined => {
  const cause = Predicate.hasProperty(error, "cause") ? error.cause : undefined
  return cause instanceof SchemaMismatch ? cause : undefined
}

const isEvidence = Schema.is(Evidence)

/**
 * The evidence of the gateway call behind a response of {@link languageModel} (route, attempts,
 * fallback, usage, cost), from its `finish` part; `undefined` for other responses.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const evidence = (
  from: { readonly content: ReadonlyArray<Response.AnyPart> } | Response.AnyPart
): Evidence | undefined => {
  const parts: ReadonlyArray<Response.AnyPart> = "content" in from ? from.content : [from]
  for (const part of parts) {
    if (part.type !== "finish") continue
    const found = part.metadata.modelgate?.evidence
    return isEvidence(found) ? found : undefined
  }
  return undefined
}

// =============================================================================
// @effect/ai served by modelgate
// =============================================================================

/**
 * What every call of the language model sends besides the prompt and tools: the workflow, the
 * tenant, and any other command field (`timeout`, `maxCost`, `maxOutputTokens`, `options`,
 * `runId`, `segment`, …) in its encoded form. Calls inside an `AgentRun` inherit the run.
 *
 * @since 0.2.0
 * @category Models
 */
export interface LanguageModelOptions extends Omit<CommandInput, "messages" | "tools" | "toolChoice"> {
  readonly workflow: string
}

/**
 * The `LanguageModel` service over the gateway (see the module documentation for the mapping).
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeLanguageModel = (
  options: LanguageModelOptions
): Effect.Effect<LanguageModel.Service, never, ModelGateway> =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway
    const { workflow, ...rest } = options

    const commandFor = (
      providerOptions: LanguageModel.ProviderOptions,
      method: string
    ): Effect.Effect<ModelCommand.ModelCommand, AiError.AiError> => {
      const format = providerOptions.responseFormat
      if (format.type === "json") {
        // An unknown workflow is the gateway's to report (InvalidRequest unknown_workflow).
        const compiled = gateway.router.workflows.get(workflow)
        const problem = compiled === undefined ? undefined : mismatch(compiled, format.schema)
        if (problem !== undefined) {
          const cause = new SchemaMismatch({ workflow, ...problem })
          return Effect.fail(Served.malformedInput(method, cause.message, cause))
        }
      }
      const messages = messagesFromPrompt(providerOptions.prompt)
      if (Either.isLeft(messages)) return Effect.fail(Served.malformedInput(method, messages.left))
      const tools: Array<ModelCommandTool> = []
      for (const tool of providerOptions.tools) {
        const definition = toolFromEffectAi(tool)
        if (Either.isLeft(definition)) return Effect.fail(Served.malformedInput(method, definition.left))
        tools.push(definition.right)
      }
      const input = {
        ...rest,
        workflow,
        messages: messages.right,
        ...(tools.length === 0 ? {} : { tools, toolChoice: toolChoiceFromEffectAi(providerOptions.toolChoice) })
      }
      return Effect.mapError(ModelCommand.decodeUnknown(input), (cause) =>
        Served.malformedInput(method, cause.message, cause)
      )
    }

    return yield* LanguageModel.make({
      generateText: (providerOptions) =>
        Effect.flatMap(commandFor(providerOptions, "generateText"), (command) =>
          Effect.flatMap(
            Effect.mapError(gateway.generate(command), (error) => Served.toAiError(error, "generateText")),
            (result) => Served.resultParts(result, "generateText")
          )
        ),
      streamText: (providerOptions) =>
        Stream.unwrap(
          Effect.map(commandFor(providerOptions, "streamText"), (command) =>
            Served.streamParts(gateway.stream(command), "streamText")
          )
        )
    })
  })

type ModelCommandTool = typeof ModelCommand.ToolDefinition.Encoded

/**
 * Provides `LanguageModel.LanguageModel` backed by the gateway's workflow `options.workflow`.
 *
 * @example
 * ```ts
 * const program = LanguageModel.generateObject({ prompt: "I was charged twice", schema: Answer }).pipe(
 *   Effect.provide(EffectAi.languageModel({ workflow: "ticket.classify", tenant: "acme" }))
 * )
 * ```
 *
 * @since 0.2.0
 * @category Layers
 */
export const languageModel = (
  options: LanguageModelOptions
): Layer.Layer<LanguageModel.LanguageModel, never, ModelGateway> =>
  Layer.effect(LanguageModel.LanguageModel, makeLanguageModel(options))

// =============================================================================
// @effect/ai providers used by modelgate
// =============================================================================

/**
 * How {@link providerAdapter} reaches the provider.
 *
 * @since 0.2.0
 * @category Models
 */
export interface ProviderAdapterOptions<R> {
  /**
   * The provider's language model for a target's `model` (built once per model, for the
   * adapter's lifetime), e.g. `(model) => OpenAiLanguageModel.layer({ model })`.
   */
  readonly model: (model: string) => Layer.Layer<LanguageModel.LanguageModel, never, R>
  /**
   * Per-request provider configuration, provided around each call: the way to pass the request's
   * `maxOutputTokens`, its sampling `options` and its structured-output `strict` flag, which
   * `@effect/ai` leaves to each provider, e.g.
   * `(request) => Context.make(OpenAiLanguageModel.Config, { max_output_tokens: request.maxOutputTokens })`.
   * Without it the provider's defaults apply (a target declaring `capabilities.options` should map
   * them here, or they are not sent).
   */
  readonly requestContext?: ((request: ProviderRequest) => Context.Context<never>) | undefined
  /**
   * The API key the provider's client sends. Never recorded: a model version or response id that
   * holds it (or a piece of it) is dropped, like one holding an e-mail address or a card number,
   * a model version not of the target's model, and a response id that is not an opaque id.
   */
  readonly apiKey?: Redacted.Redacted<string> | undefined
}

/**
 * The adapter's `generate` and `stream` over an `@effect/ai` provider.
 *
 * - `generate` calls `generateText` (or `generateObject` with the request's JSON Schema when it
 *   asks for structured output) with tool-call resolution off; the raw text goes back to the
 *   engine, which validates it with the workflow's schema.
 * - `stream` maps `streamText` parts onto stream events (text deltas, tool-call deltas, one
 *   `Finish`; an error part is classified like an error event after HTTP 200; a stream without a
 *   finish part is `stream_truncated`). `@effect/ai` 0.37 streams text only, so a request for
 *   structured output is answered by `generateObject` and sent as one chunk.
 * - `AiError`s are classified by the module documentation's rules.
 *
 * Not visible through `@effect/ai` 0.37: the response headers of a success (rate-limit headroom,
 * the `x-request-id`; the response id is used as the request id), and a refusal in a stream.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeProviderAdapter = <R>(
  provider: string,
  options: ProviderAdapterOptions<R>
): Effect.Effect<Omit<ProviderAdapter.ProviderAdapter, "provider">, never, R | Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const context = yield* Effect.context<R>()
    const modelFor = yield* Effect.cachedFunction((model: string) =>
      Effect.map(
        Effect.provide(Layer.buildWithScope(options.model(model), scope), context),
        Context.get(LanguageModel.LanguageModel)
      )
    )
    const withRequest = options.requestContext
    const rules: Echo.EchoRules = {
      provider,
      requestId: Echo.opaqueRequestId,
      families: [],
      secrets: [options.apiKey]
    }
    const echoError = (error: ProviderError) => Echo.checkError(rules, error)
    const echoEvent =
      (model: string) =>
      (event: ProviderStreamEvent): ProviderStreamEvent => {
        if (event._tag === "Started") {
          const requestId = Echo.checkRequestId(rules, event.requestId)
          return requestId === event.requestId ? event : { ...event, requestId }
        }
        if (event._tag === "Finish") {
          const modelVersion = Echo.checkModelVersion(rules, model, event.modelVersion)
          return modelVersion === event.modelVersion ? event : { ...event, modelVersion }
        }
        return event
      }
    const classify = (error: AiError.AiError) =>
      Effect.flatMap(Clock.currentTimeMillis, (nowMs) => Effect.fail(classifyAiError(provider, error, nowMs)))

    const generate = (request: ProviderRequest): Effect.Effect<ProviderResponse, ProviderError> => {
      const input = Used.modelInput(provider, request)
      if (Either.isLeft(input)) return Effect.fail(input.left)
      const { prompt, toolkit, toolChoice } = input.right
      const call = Effect.gen(function* () {
        const model = yield* modelFor(request.target.model)
        const output = request.output
        if (output === undefined) {
          const response = yield* Effect.catchAll(
            model.generateText({ prompt, toolkit, toolChoice, disableToolCallResolution: true }),
            classify
          )
          return yield* Used.fromParts(provider, response.content)
        }
        // generateObject drops the parts when the text does not decode (a refusal has no JSON):
        // keep them from the span transformer, which sees them first.
        let seen: ReadonlyArray<Response.AnyPart> = []
        const outer = yield* Effect.serviceOption(Telemetry.CurrentSpanTransformer)
        const response = yield* model
          .generateObject({
            prompt,
            toolkit,
            toolChoice,
            disableToolCallResolution: true,
            objectName: output.name,
            schema: Used.anyObject.annotations({ jsonSchema: output.jsonSchema })
          })
          .pipe(
            Effect.provideService(Telemetry.CurrentSpanTransformer, (transformed) => {
              seen = transformed.response
              if (Option.isSome(outer)) outer.value(transformed)
            }),
            Effect.catchAll((error) =>
              error._tag === "MalformedOutput" && seen.some(Used.isRefusalPart)
                ? Effect.succeed(undefined)
                : classify(error)
            )
          )
        return yield* Used.fromParts(provider, response === undefined ? seen : response.content)
      })
      const checked = call.pipe(
        Effect.map((response) => Echo.checkAnswer(rules, request.target.model, response)),
        Effect.mapError(echoError)
      )
      return withRequest === undefined ? checked : Effect.mapInputContext(checked, Context.merge(withRequest(request)))
    }

    const stream = (request: ProviderRequest): Stream.Stream<ProviderStreamEvent, ProviderError> => {
      if (request.output !== undefined)
        return Stream.flatMap(Stream.fromEffect(generate(request)), (response) =>
          Stream.fromIterable<ProviderStreamEvent>([
            { _tag: "Started", requestId: response.requestId, httpStatus: 200 },
            ...responseToEvents(response)
          ])
        )
      const input = Used.modelInput(provider, request)
      if (Either.isLeft(input)) return Stream.fail(input.left)
      const { prompt, toolkit, toolChoice } = input.right
      const events = Stream.unwrap(
        Effect.map(modelFor(request.target.model), (model) =>
          Used.streamEvents(
            provider,
            model
              .streamText({ prompt, toolkit, toolChoice, disableToolCallResolution: true })
              .pipe(Stream.catchAll((error) => Stream.fromEffect(classify(error))))
          )
        )
      )
      const checked = events.pipe(Stream.map(echoEvent(request.target.model)), Stream.mapError(echoError))
      return withRequest === undefined ? checked : Stream.mapInputContext(checked, Context.merge(withRequest(request)))
    }

    return { generate, stream }
  })

/**
 * Provides a `ProviderAdapter` for `provider` (the id targets name in `provider`) over an
 * `@effect/ai` provider's language model.
 *
 * @example
 * ```ts
 * import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
 *
 * const OpenAiResponses = EffectAi.providerAdapter("openai-responses", {
 *   model: (model) => OpenAiLanguageModel.layer({ model }),
 *   requestContext: (request) =>
 *     Context.make(OpenAiLanguageModel.Config, { max_output_tokens: request.maxOutputTokens })
 * }).pipe(Layer.provide(OpenAiClient.layerConfig({ apiKey: Config.redacted("OPENAI_API_KEY") })))
 * ```
 *
 * @since 0.2.0
 * @category Layers
 */
export const providerAdapter = <R>(
  provider: string,
  options: ProviderAdapterOptions<R>
): Layer.Layer<ProviderAdapter.ProviderAdapter, never, Exclude<R, Scope.Scope>> =>
  ProviderAdapter.layer(provider, makeProviderAdapter(provider, options))

/**
 * The definition part of an `@effect/ai` `Tool` that {@link toolLoopTool} reads: a `Tool.make(…)`
 * value (with its parameters, success and failure schemas) fits it.
 *
 * @since 0.2.0
 * @category Agents
 */
export interface ToolDefinition<Name extends string, A, I, Res, ResI, E, EI> {
  readonly name: Name
  readonly description?: string | undefined
  readonly parametersSchema: Schema.Schema<A, I>
  readonly successSchema: Schema.Schema<Res, ResI>
  readonly failureSchema: Schema.Schema<E, EI>
  readonly annotations: Context.Context<never>
}

/**
 * A modelgate `ToolLoop` tool from an `@effect/ai` `Tool` definition and its handler, so a tool is
 * defined once and used both by `LanguageModel` code and by `ToolLoop.run` (which runs
 * side-effecting tools through the `ToolLedger`). The parameters, result and failure schemas are
 * the tool's own; it is side-effecting unless annotated `Tool.Readonly`; the description defaults
 * to the name.
 *
 * @example
 * ```ts
 * const Refund = Tool.make("issue_refund", {
 *   parameters: { orderId: Schema.String, amount: Schema.Number },
 *   success: Schema.Struct({ refundId: Schema.String })
 * })
 * const refund = EffectAi.toolLoopTool(Refund, ({ orderId, amount }) => payments.refund(orderId, amount))
 * yield* ToolLoop.run(command, [refund], { maxSteps: 4 })
 * ```
 *
 * @since 0.2.0
 * @category Agents
 */
export const toolLoopTool = <const Name extends string, A, I, Res, ResI, E, EI>(
  definition: ToolDefinition<Name, A, I, Res, ResI, E, EI>,
  handler: (args: A, context: ToolLoop.ToolContext) => Effect.Effect<Res, E>
): ToolLoop.Tool<Name, A, I, Res, ResI, E> =>
  ToolLoop.make<Name, A, I, Res, ResI, E, EI>({
    name: definition.name,
    description: definition.description ?? definition.name,
    parameters: definition.parametersSchema,
    result: definition.successSchema,
    failure: definition.failureSchema,
    sideEffecting: !Context.get(definition.annotations, Tool.Readonly),
    handler
  })

/**
 * The `HttpClient` of `@effect/ai-openai`'s `OpenAiClient` with the Responses wire normalized to
 * what its generated schemas read: nested error events and failed responses become flat error
 * events (so `insufficient_quota` mid-stream is `ProviderRejected(quota_exhausted)`, not a
 * retryable truncated stream), and response objects missing a field it requires get the field's
 * empty value (so real answers that leave one out are read). Provide it between the client and
 * the transport.
 *
 * @example
 * ```ts
 * const Client = OpenAiClient.layer({ apiKey }).pipe(
 *   Layer.provide(EffectAi.responsesWireCompat),
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 *
 * @since 0.2.0
 * @category Layers
 */
export const responsesWireCompat: Layer.Layer<HttpClient.HttpClient, never, HttpClient.HttpClient> = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, responsesCompat)
)
