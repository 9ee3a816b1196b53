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
 * @since 0.5.0
 */
import type { Response, Toolkit } from "@effect/ai"
import { HttpClient } from "@effect/platform"
import { AiError, LanguageModel, Prompt, Telemetry, Tool } from "@effect/ai"
import { GatewayError } from "@modelgate/core/Errors"
import type { ProviderError } from "@modelgate/core/Errors"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import { ToolCall } from "@modelgate/core/ModelCommand"
import type { CommandInput } from "@modelgate/core/ModelGateway"
import { ModelGateway } from "@modelgate/core/ModelGateway"
import { Evidence } from "@modelgate/core/ModelResult"
import type { FinishReason, ModelResult } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import * as ToolLoop from "@modelgate/core/ToolLoop"
import type { ProviderRequest, ProviderResponse, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import type { StreamEvent } from "@modelgate/core/StreamEvent"
import type { Scope } from "effect"
import { Clock, Context, Effect, Either, Layer, Option, Predicate, Schema, Stream } from "effect"
import { responseToEvents } from "./internal/adapter.js"
import { requestIdOf } from "./internal/bounded.js"
import { providerError } from "./internal/classify.js"
import { classifyAiError, classifyStreamError } from "./internal/effectAi/classify.js"
import { responsesCompat } from "./internal/effectAi/responsesCompat.js"
import {
  messagesFromPrompt,
  promptFromMessages,
  toolChoiceFromEffectAi,
  toolFromEffectAi
} from "./internal/effectAi/prompt.js"
import { mismatch } from "./internal/effectAi/schemaCheck.js"
import { makeUsage } from "./internal/usage.js"

// =============================================================================
// Errors and accessors
// =============================================================================

/**
 * A `generateObject` call whose schema the workflow cannot serve: the workflow declares no output
 * schema, or a different one. Raised before any provider is called, as the cause of an
 * `AiError.MalformedInput` (read it with {@link schemaMismatch}).
 *
 * @since 0.5.0
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
 * @since 0.5.0
 * @category Accessors
 */
export const gatewayError = (error: unknown): GatewayError | undefined => {
  const cause = Predicate.hasProperty(error, "cause") ? error.cause : undefined
  return isGatewayError(cause) ? cause : undefined
}

/**
 * The {@link SchemaMismatch} an `AiError` carries as its `cause`, or `undefined`.
 *
 * @since 0.5.0
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
 * @since 0.5.0
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
 * @since 0.5.0
 * @category Models
 */
export interface LanguageModelOptions extends Omit<CommandInput, "messages" | "tools" | "toolChoice"> {
  readonly workflow: string
}

const toAiError = (error: GatewayError, method: string): AiError.AiError => {
  const fields = { module: "ModelGateway", method, description: `${error._tag}: ${error.message}`, cause: error }
  switch (error._tag) {
    case "InvalidRequest":
      return new AiError.MalformedInput(fields, { disableValidation: true })
    case "InvalidOutput":
      return new AiError.MalformedOutput(fields, { disableValidation: true })
    default:
      return new AiError.UnknownError(fields, { disableValidation: true })
  }
}

const malformedInput = (method: string, description: string, cause?: unknown) =>
  new AiError.MalformedInput({ module: "EffectAi", method, description, cause }, { disableValidation: true })

const finishReasons: Record<FinishReason, Response.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool-calls",
  content_filter: "content-filter",
  refusal: "content-filter",
  other: "other"
}

/** The text of a result: the answer's text, else the JSON of a value without text (a degraded answer). */
const textOf = (result: ModelResult): string | undefined =>
  result.content.text ??
  (result.content.value === undefined || result.content.value === null
    ? undefined
    : JSON.stringify(result.content.value))

const toolCallPart = (call: ToolCall, method: string): Either.Either<Response.ToolCallPartEncoded, AiError.AiError> => {
  try {
    return Either.right({ type: "tool-call", id: call.id, name: call.name, params: JSON.parse(call.arguments) })
  } catch (cause) {
    return Either.left(
      new AiError.MalformedOutput(
        {
          module: "EffectAi",
          method,
          description: `the arguments of tool call ${call.id.slice(0, 64)} are not JSON`,
          cause
        },
        { disableValidation: true }
      )
    )
  }
}

const metadataPart = (result: ModelResult): Response.ResponseMetadataPartEncoded => ({
  type: "response-metadata",
  id: result.evidence.callId,
  modelId: result.evidence.modelVersion ?? result.evidence.model,
  timestamp: new Date(result.evidence.startedAt).toISOString()
})

const finishPart = (result: ModelResult): Response.FinishPartEncoded => {
  const usage = result.evidence.usage
  return {
    type: "finish",
    reason: finishReasons[result.finishReason],
    usage: {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      totalTokens: usage.inputTokens + usage.outputTokens,
      reasoningTokens: usage.reasoningTokens,
      cachedInputTokens: usage.cachedInputTokens
    },
    metadata: { modelgate: { evidence: result.evidence } }
  }
}

/** The parts that end every answer, streamed or not: its tool calls, then `finish`. */
const closingParts = (
  result: ModelResult,
  method: string
): Either.Either<Array<Response.ToolCallPartEncoded | Response.FinishPartEncoded>, AiError.AiError> => {
  const parts: Array<Response.ToolCallPartEncoded | Response.FinishPartEncoded> = []
  for (const call of result.content.toolCalls) {
    const part = toolCallPart(call, method)
    if (Either.isLeft(part)) return Either.left(part.left)
    parts.push(part.right)
  }
  parts.push(finishPart(result))
  return Either.right(parts)
}

const resultParts = (
  result: ModelResult,
  method: string
): Either.Either<Array<Response.PartEncoded>, AiError.AiError> => {
  const parts: Array<Response.PartEncoded> = [metadataPart(result)]
  const text = textOf(result)
  if (text !== undefined && text !== "") parts.push({ type: "text", text })
  return Either.map(closingParts(result, method), (closing) => [...parts, ...closing])
}

/** Stream parts of the gateway's stream events; text and tool-call ids are stable per stream. */
const streamParts = (
  events: Stream.Stream<StreamEvent, GatewayError>,
  method: string
): Stream.Stream<Response.StreamPartEncoded, AiError.AiError> =>
  Stream.suspend(() => {
    const textId = "text-0"
    let textOpen = false
    const toolIds = new Map<number, string>()
    const onEvent = (event: StreamEvent): Either.Either<ReadonlyArray<Response.StreamPartEncoded>, AiError.AiError> => {
      switch (event._tag) {
        case "TextDelta": {
          if (event.text === "") return Either.right([])
          const delta: Response.StreamPartEncoded = { type: "text-delta", id: textId, delta: event.text }
          if (textOpen) return Either.right([delta])
          textOpen = true
          return Either.right([{ type: "text-start", id: textId }, delta])
        }
        case "ToolCallDelta": {
          const known = toolIds.get(event.index)
          if (known !== undefined)
            return Either.right(
              event.argumentsDelta === "" ? [] : [{ type: "tool-params-delta", id: known, delta: event.argumentsDelta }]
            )
          const id = event.id ?? `call_${event.index}`
          toolIds.set(event.index, id)
          return Either.right([
            { type: "tool-params-start", id, name: event.name ?? "" },
            ...(event.argumentsDelta === ""
              ? []
              : [{ type: "tool-params-delta" as const, id, delta: event.argumentsDelta }])
          ])
        }
        case "Final": {
          const result = event.result
          const parts: Array<Response.StreamPartEncoded> = [metadataPart(result)]
          if (textOpen) parts.push({ type: "text-end", id: textId })
          else {
            // No delta streamed (a degraded answer): the whole text at once.
            const text = textOf(result)
            if (text !== undefined && text !== "")
              parts.push(
                { type: "text-start", id: textId },
                { type: "text-delta", id: textId, delta: text },
                { type: "text-end", id: textId }
              )
          }
          for (const id of toolIds.values()) parts.push({ type: "tool-params-end", id })
          return Either.map(closingParts(result, method), (closing) => [...parts, ...closing])
        }
        default:
          // RouteSelected, PartialObject, UsageReported: the finish part carries the outcome.
          return Either.right([])
      }
    }
    return events.pipe(
      Stream.mapError((error) => toAiError(error, method)),
      Stream.mapEffect((event) => onEvent(event)),
      Stream.flattenIterables
    )
  })

/**
 * The `LanguageModel` service over the gateway (see the module documentation for the mapping).
 *
 * @since 0.5.0
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
          return Effect.fail(malformedInput(method, cause.message, cause))
        }
      }
      const messages = messagesFromPrompt(providerOptions.prompt)
      if (Either.isLeft(messages)) return Effect.fail(malformedInput(method, messages.left))
      const tools: Array<ModelCommandTool> = []
      for (const tool of providerOptions.tools) {
        const definition = toolFromEffectAi(tool)
        if (Either.isLeft(definition)) return Effect.fail(malformedInput(method, definition.left))
        tools.push(definition.right)
      }
      const input = {
        ...rest,
        workflow,
        messages: messages.right,
        ...(tools.length === 0 ? {} : { tools, toolChoice: toolChoiceFromEffectAi(providerOptions.toolChoice) })
      }
      return Effect.mapError(ModelCommand.decodeUnknown(input), (cause) => malformedInput(method, cause.message, cause))
    }

    return yield* LanguageModel.make({
      generateText: (providerOptions) =>
        Effect.flatMap(commandFor(providerOptions, "generateText"), (command) =>
          Effect.flatMap(
            Effect.mapError(gateway.generate(command), (error) => toAiError(error, "generateText")),
            (result) => resultParts(result, "generateText")
          )
        ),
      streamText: (providerOptions) =>
        Stream.unwrap(
          Effect.map(commandFor(providerOptions, "streamText"), (command) =>
            streamParts(gateway.stream(command), "streamText")
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
 * @since 0.5.0
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
 * @since 0.5.0
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
}

const anyParameters = Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))
const anyObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const decodePrompt = Schema.decodeEither(Prompt.Prompt)
const decodeToolCall = Schema.decodeUnknownEither(ToolCall)

/** What an `@effect/ai` call needs from a provider request. */
interface ModelInput {
  readonly prompt: Prompt.Prompt
  readonly toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> | undefined
  readonly toolChoice: LanguageModel.ToolChoice<string>
}

const modelInput = (provider: string, request: ProviderRequest): Either.Either<ModelInput, ProviderError> => {
  const refused = (what: string) =>
    Either.left(providerError({ kind: "invalid_request", processed: "no", detail: `${provider}: ${what}` }))
  const messages = promptFromMessages(request.messages)
  if (Either.isLeft(messages)) return refused(messages.left)
  const prompt = decodePrompt({ content: messages.right })
  if (Either.isLeft(prompt)) return refused("the messages do not form an @effect/ai prompt")
  let toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> | undefined
  if (request.tools.length > 0) {
    const tools: Record<string, Tool.Any> = {}
    for (const definition of request.tools) {
      // The parameters are the definition's JSON Schema, sent as is; any object decodes.
      tools[definition.name] = Tool.make(definition.name, { description: definition.description }).setParameters(
        anyParameters.annotations({ jsonSchema: definition.parameters })
      )
    }
    // modelgate returns tool calls to its caller: @effect/ai never resolves them here.
    toolkit = { tools, handle: () => Effect.dieMessage("modelgate resolves no tool calls in an adapter") }
  }
  const choice = request.toolChoice
  return Either.right({
    prompt: prompt.right,
    toolkit,
    toolChoice: choice === undefined ? "auto" : typeof choice === "string" ? choice : { tool: choice.tool }
  })
}

/** A refusal a provider reported in a text part's metadata (`@effect/ai-openai`: `metadata.openai.refusal`). */
const isRefusalPart = (part: Response.AnyPart): boolean =>
  part.type === "text" && Object.values(part.metadata).some((m) => typeof m?.refusal === "string")

const fromFinishReason = (reason: Response.FinishReason | undefined): FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool-calls":
      return "tool_calls"
    case "content-filter":
      return "content_filter"
    default:
      return "other"
  }
}

const usageOf = (usage: Response.Usage) =>
  makeUsage({
    inputTokens: usage.inputTokens,
    cachedInputTokens: usage.cachedInputTokens,
    outputTokens: usage.outputTokens,
    reasoningTokens: usage.reasoningTokens
  })

/** A provider response from the parts of a complete `@effect/ai` answer. */
const fromParts = (
  provider: string,
  parts: ReadonlyArray<Response.AnyPart>
): Either.Either<ProviderResponse, ProviderError> => {
  let text = ""
  let refusal = false
  let finish: Response.FinishPart | undefined
  let modelVersion: string | undefined
  let responseId: string | undefined
  const toolCalls: Array<ToolCall> = []
  for (const part of parts) {
    switch (part.type) {
      case "text":
        if (isRefusalPart(part)) refusal = true
        else text += part.text
        break
      case "tool-call": {
        if (part.providerExecuted) break
        const call = decodeToolCall({ id: part.id, name: part.name, arguments: JSON.stringify(part.params ?? {}) })
        if (Either.isLeft(call))
          return Either.left(
            providerError({
              kind: "invalid_output",
              processed: "maybe",
              httpStatus: 200,
              detail: `${provider}: a tool call is out of bounds`
            })
          )
        toolCalls.push(call.right)
        break
      }
      case "response-metadata":
        modelVersion = Option.getOrUndefined(part.modelId)
        responseId = Option.getOrUndefined(part.id)
        break
      case "finish":
        finish = part
        break
    }
  }
  const reason = fromFinishReason(finish?.reason)
  return Either.right({
    text: text === "" ? undefined : text,
    toolCalls,
    finishReason: refusal ? "refusal" : reason,
    refusal: refusal || reason === "content_filter",
    usage: finish === undefined ? undefined : usageOf(finish.usage),
    modelVersion,
    requestId: requestIdOf(responseId),
    httpStatus: 200
  })
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
 * @since 0.5.0
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
    const classify = (error: AiError.AiError) =>
      Effect.flatMap(Clock.currentTimeMillis, (nowMs) => Effect.fail(classifyAiError(provider, error, nowMs)))

    const generate = (request: ProviderRequest): Effect.Effect<ProviderResponse, ProviderError> => {
      const input = modelInput(provider, request)
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
          return yield* fromParts(provider, response.content)
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
            schema: anyObject.annotations({ jsonSchema: output.jsonSchema })
          })
          .pipe(
            Effect.provideService(Telemetry.CurrentSpanTransformer, (transformed) => {
              seen = transformed.response
              if (Option.isSome(outer)) outer.value(transformed)
            }),
            Effect.catchAll((error) =>
              error._tag === "MalformedOutput" && seen.some(isRefusalPart) ? Effect.succeed(undefined) : classify(error)
            )
          )
        return yield* fromParts(provider, response === undefined ? seen : response.content)
      })
      return withRequest === undefined ? call : Effect.mapInputContext(call, Context.merge(withRequest(request)))
    }

    const stream = (request: ProviderRequest): Stream.Stream<ProviderStreamEvent, ProviderError> => {
      if (request.output !== undefined)
        return Stream.flatMap(Stream.fromEffect(generate(request)), (response) =>
          Stream.fromIterable<ProviderStreamEvent>([
            { _tag: "Started", requestId: response.requestId, httpStatus: 200 },
            ...responseToEvents(response)
          ])
        )
      const input = modelInput(provider, request)
      if (Either.isLeft(input)) return Stream.fail(input.left)
      const { prompt, toolkit, toolChoice } = input.right
      const events = Stream.unwrap(
        Effect.map(modelFor(request.target.model), (model) =>
          streamEvents(
            provider,
            model
              .streamText({ prompt, toolkit, toolChoice, disableToolCallResolution: true })
              .pipe(Stream.catchAll((error) => Stream.fromEffect(classify(error))))
          )
        )
      )
      return withRequest === undefined ? events : Stream.mapInputContext(events, Context.merge(withRequest(request)))
    }

    return { generate, stream }
  })

/** Provider stream events from `@effect/ai` stream parts. */
const streamEvents = <E>(
  provider: string,
  parts: Stream.Stream<Response.AnyPart, ProviderError | E>
): Stream.Stream<ProviderStreamEvent, ProviderError | E> =>
  Stream.suspend(() => {
    let started = false
    let finished = false
    let modelVersion: string | undefined
    const indexes = new Map<string, number>()
    const withArguments = new Set<string>()
    const onPart = (part: Response.AnyPart): Either.Either<ReadonlyArray<ProviderStreamEvent>, ProviderError> => {
      const out: Array<ProviderStreamEvent> = []
      if (!started) {
        started = true
        const id = part.type === "response-metadata" ? Option.getOrUndefined(part.id) : undefined
        out.push({ _tag: "Started", requestId: requestIdOf(id), httpStatus: 200 })
      }
      if (finished) return Either.right(out)
      switch (part.type) {
        case "response-metadata":
          modelVersion = Option.getOrUndefined(part.modelId) ?? modelVersion
          break
        case "text-delta":
          if (part.delta !== "") out.push({ _tag: "TextDelta", text: part.delta })
          break
        case "tool-params-start": {
          const index = indexes.size
          indexes.set(part.id, index)
          out.push({ _tag: "ToolCallDelta", index, id: part.id, name: part.name, argumentsDelta: "" })
          break
        }
        case "tool-params-delta": {
          const index = indexes.get(part.id)
          if (index === undefined || part.delta === "") break
          withArguments.add(part.id)
          out.push({ _tag: "ToolCallDelta", index, id: undefined, name: undefined, argumentsDelta: part.delta })
          break
        }
        case "tool-call": {
          if (part.providerExecuted || withArguments.has(part.id)) break
          const known = indexes.get(part.id)
          const index = known ?? indexes.size
          if (known === undefined) indexes.set(part.id, index)
          out.push({
            _tag: "ToolCallDelta",
            index,
            id: known === undefined ? part.id : undefined,
            name: known === undefined ? part.name : undefined,
            argumentsDelta: JSON.stringify(part.params ?? {})
          })
          break
        }
        case "error":
          return Either.left(classifyStreamError(provider, part.error))
        case "finish":
          finished = true
          out.push({
            _tag: "Finish",
            finishReason: fromFinishReason(part.reason),
            refusal: part.reason === "content-filter",
            usage: usageOf(part.usage),
            modelVersion
          })
          break
      }
      return Either.right(out)
    }
    const truncated = providerError({
      kind: "stream_truncated",
      processed: "maybe",
      httpStatus: 200,
      detail: `${provider}: the stream ended without a finish`
    })
    return parts.pipe(
      Stream.mapEffect((part) => onPart(part)),
      Stream.flattenIterables,
      Stream.concat(Stream.suspend(() => (finished ? Stream.empty : Stream.fail(truncated))))
    )
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
 * @since 0.5.0
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
 * @since 0.5.0
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
 * @since 0.5.0
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
 * @since 0.3.0
 * @category Layers
 */
export const responsesWireCompat: Layer.Layer<HttpClient.HttpClient, never, HttpClient.HttpClient> = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, responsesCompat)
)
