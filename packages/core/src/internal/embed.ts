/**
 * `ModelGateway.embed` on the one pipeline (`pipeline.ts`): the command travels as a
 * `ModelCommand` whose messages are its inputs (so routing, input limits, token counts, budgets,
 * deadline, permits, breakers, retries, fallback, settle and record are the pipeline's), and each
 * attempt calls the adapter's `embed` instead of `generate`. The vectors of the answering attempt
 * are kept by this call's invoke; the evidence is the pipeline's.
 */
import { Array as Arr, Effect, Either, Option } from "effect"
import type { EmbedCommand } from "../Embeddings.js"
import { EmbeddingResult } from "../Embeddings.js"
import type { GatewayError } from "../Errors.js"
import { ProviderError } from "../ProviderAdapter.js"
import { ModelCommand } from "../ModelCommand.js"
import { Usage } from "../ModelResult.js"
import type { EmbedResponse, ProviderResponse } from "../ProviderAdapter.js"
import type { Invoke } from "./attemptContext.js"
import { bounded } from "./deadline.js"
import type { EngineContext } from "./call.js"
import { execute } from "./pipeline.js"

/** The command as the pipeline carries it: one user message per input. */
const carrierOf = (command: EmbedCommand): ModelCommand =>
  new ModelCommand(
    {
      workflow: command.workflow,
      tenant: command.tenant,
      messages: Arr.map(command.inputs, (content) => ({ _tag: "user" as const, content })),
      timeout: command.timeout,
      maxCost: command.maxCost,
      maxInputTokens: command.maxInputTokens,
      dataClass: command.dataClass,
      regions: command.regions,
      runId: command.runId,
      step: command.step,
      requestId: command.requestId
    },
    { disableValidation: true }
  )

/**
 * The answer checked against what was asked: one vector per input, each of the target's length.
 * A mismatch is a malformed answer (`invalid_output`): billed, and the call moves to the next
 * compatible target.
 */
const checked = (
  response: EmbedResponse,
  inputs: number,
  dimensions: number,
  usage: Usage,
  provider: string
): Either.Either<EmbedResponse, ProviderError> => {
  let problem: string | undefined
  if (response.vectors.length !== inputs) problem = `${response.vectors.length} vectors for ${inputs} inputs`
  else {
    for (const v of response.vectors) {
      if (v.length !== dimensions) {
        problem = `a vector of ${v.length} dimensions, ${dimensions} expected`
        break
      }
    }
  }
  if (problem === undefined) return Either.right(response)
  return Either.left(
    new ProviderError({
      kind: "invalid_output",
      processed: "maybe",
      httpStatus: response.httpStatus,
      requestId: response.requestId,
      usage,
      detail: `${provider}: ${problem}`
    })
  )
}

/** Runs one embedding command through the pipeline. */
export const embed = (ctx: EngineContext, command: EmbedCommand): Effect.Effect<EmbeddingResult, GatewayError> =>
  Effect.suspend(() => {
    let vectors: ReadonlyArray<ReadonlyArray<number>> = []
    const invoke: Invoke = (adapter, request, attempt) => {
      const target = request.target
      const produced = target.capabilities.embeddings
      // Startup validation keeps both from happening (NO_EMBED_ADAPTER, CAPABILITY_MISSING).
      if (adapter.embed === undefined || produced === undefined) {
        return Effect.fail(
          new ProviderError({
            kind: "rejected",
            processed: "no",
            detail: `${target.provider}: the adapter does not embed`
          })
        )
      }
      const answered = bounded(
        adapter.embed({
          target,
          inputs: command.inputs,
          dimensions: produced.sendDimensions ? produced.dimensions : undefined,
          task: command.task,
          timeout: request.timeout
        }),
        attempt.until
      )
      // A provider that reports no usage (Gemini) is billed the estimated input: counted (when the
      // router did not) once the answer is in, by the one sliced counter, outside the attempt's bound.
      const usageOf = (response: EmbedResponse): Effect.Effect<Usage> =>
        response.usage !== undefined
          ? Effect.succeed(response.usage)
          : Effect.map(
              attempt.inputTokens,
              (inputTokens) => new Usage({ inputTokens, outputTokens: 0 }, { disableValidation: true })
            )
      return Effect.flatMap(answered, (maybe) =>
        Option.isNone(maybe)
          ? Effect.succeedNone
          : Effect.flatMap(usageOf(maybe.value), (usage) => {
              const response = maybe.value
              return Either.map(
                checked(response, command.inputs.length, produced.dimensions, usage, target.provider),
                (ok): Option.Option<ProviderResponse> => {
                  vectors = ok.vectors
                  return Option.some({
                    text: undefined,
                    toolCalls: [],
                    finishReason: "stop",
                    refusal: false,
                    usage,
                    modelVersion: ok.modelVersion,
                    requestId: ok.requestId,
                    httpStatus: ok.httpStatus,
                    rateLimit: ok.rateLimit
                  })
                }
              )
            })
      )
    }
    return Effect.map(
      execute(ctx, carrierOf(command), "embed", invoke),
      (result) => new EmbeddingResult({ vectors, evidence: result.evidence }, { disableValidation: true })
    )
  })
