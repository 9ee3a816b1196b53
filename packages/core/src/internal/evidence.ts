/**
 * The evidence of a call: attempt records, the envelope's `Evidence`, and the call's one
 * `CallRecord`, handed to telemetry, the recorder, the agent run and lifecycle hooks. Built from
 * the call's tally once, when the call answers or settles; never holds content.
 */
import { Cause, Duration, Effect, Exit, Option } from "effect"
import type { Failure } from "../Errors.js"
import type { Classified } from "./disposition.js"
import type { AttemptRecord, CallRecord, Cost, Evidence, ModelResult } from "../ModelResult.js"
import { Usage } from "../ModelResult.js"
import * as Options from "./options.js"
import type { Escalation } from "../RouteDecision.js"
import * as RunEvents from "../RunEvents.js"
import type { AttemptContext } from "./attemptContext.js"
import { type Answer, type Call, type EngineContext, type MetricLabelValues, ranOn } from "./call.js"
import { withoutTo } from "./router/escalation.js"
import * as Report from "./telemetry.js"

/**
 * The record of an attempt that ended at `end`, as `Disposition.classify` classified it. Every
 * attempt record (this one and {@link cancelledRecord}) is one object literal with every field in
 * one order: records then share one object shape (spreading partial objects into records made
 * them slow to build and to read).
 */
export const recordOf = (
  call: Call,
  attempt: AttemptContext,
  end: number,
  maxOutputTokens: number,
  c: Classified,
  usage: Usage | undefined,
  cost: number | undefined
): AttemptRecord => {
  const r = c.response
  const e = c.error
  return {
    target: attempt.target.ref,
    attempt: attempt.attempt,
    outcome: c.outcome,
    errorTag: c.failure?._tag,
    httpStatus: r !== undefined ? r.httpStatus : e?.httpStatus,
    providerRequestId: r !== undefined ? r.requestId : e?.requestId,
    startOffsetMs: attempt.startedAt - call.startedAt,
    latencyMs: end - attempt.startedAt,
    timeoutMs: attempt.until - attempt.startedAt,
    ttftMs: attempt.progress.ttftMs,
    retryAfterMs: e?.retryAfter !== undefined ? Duration.toMillis(e.retryAfter) : undefined,
    possiblyProcessed: r !== undefined ? undefined : c.possiblyProcessed,
    maxOutputTokens,
    usage,
    cost,
    modelVersion: r?.modelVersion
  }
}

/** The record of an attempt cut by the caller's cancellation at `at` (same shape as {@link recordOf}). */
export const cancelledRecord = (call: Call, attempt: AttemptContext, at: number): AttemptRecord => ({
  target: attempt.target.ref,
  attempt: attempt.attempt,
  outcome: "cancelled",
  errorTag: undefined,
  httpStatus: undefined,
  providerRequestId: undefined,
  startOffsetMs: attempt.startedAt - call.startedAt,
  latencyMs: at - attempt.startedAt,
  timeoutMs: attempt.until - attempt.startedAt,
  ttftMs: attempt.progress.ttftMs,
  retryAfterMs: undefined,
  possiblyProcessed: true,
  maxOutputTokens: call.tally.lastMaxOutputTokens,
  usage: undefined,
  cost: undefined,
  modelVersion: undefined
})

/** The evidence of the call at `at`, with its answer (a success) or without. */
export const evidenceOf = (call: Call, answer: Answer | undefined, at: number): Evidence => {
  const { tally, holds } = call
  const route = holds.route
  const w = route?.compiled.workflow
  const t = answer?.target
  return {
    callId: call.id,
    workflow: call.command.workflow,
    policyVersion: w?.policyVersion ?? "",
    promptId: w?.prompt.id ?? "",
    promptVersion: w?.prompt.version ?? "",
    schemaVersion: w?.output?.schemaVersion,
    pricingVersion: t?.pricing.pricingVersion ?? route?.targets[0]?.pricing.pricingVersion,
    catalogueVersion: t !== undefined ? t.catalogueVersion : route?.targets[0]?.catalogueVersion,
    configVersion: call.config.version,
    target: t?.ref,
    model: t?.model,
    modelVersion: tally.modelVersion,
    eligible: route?.eligible ?? [],
    excluded: tally.skipped.length === 0 ? (route?.excluded ?? []) : [...(route?.excluded ?? []), ...tally.skipped],
    routeId: route?.routeId,
    selectionReason: route?.selectionReason,
    escalations: escalationsOf(call),
    scores: route?.scores,
    canary: route?.canary,
    fallbackUsed: tally.fallbackUsed,
    degraded: answer?.degraded ?? false,
    attempts: tally.attempts.slice(),
    retryCount: tally.retryCount,
    retryBudgetExhausted: tally.retryBudgetExhausted,
    startedAt: call.startedAt,
    totalLatencyMs: at - call.startedAt,
    usage: usageOf(tally),
    cost: {
      currency: "USD",
      estimated: holds.estimatedCost,
      reserved: holds.reservation?.amount ?? 0,
      actual: tally.spent,
      overspent:
        holds.settlement !== undefined && holds.settlement.overspent > 0 ? holds.settlement.overspent : undefined,
      audioInput: tally.audioSpent
    } satisfies Cost,
    schemaValid: answer !== undefined ? answer.schemaValid : tally.schemaValid,
    options: Options.evidenceOf(route?.options, t),
    runId: call.runId,
    step: call.step,
    embedding: call.mode === "embed" ? embeddingEvidenceOf(call) : undefined,
    identity: call.identity,
    requestId: call.command.requestId
  } satisfies Evidence
}

/**
 * The call's total usage: the usage its one attempt reported, when that is the whole of it (the
 * common case: no object to build), else a new sum.
 */
const usageOf = (tally: Call["tally"]): Usage => {
  const only = tally.attempts.length === 1 ? tally.attempts[0]!.usage : undefined
  if (
    only !== undefined &&
    only.inputTokens === tally.inputTokens &&
    only.cachedInputTokens === tally.cachedInputTokens &&
    only.outputTokens === tally.outputTokens &&
    only.reasoningTokens === tally.reasoningTokens &&
    only.audioInputTokens === tally.audioInputTokens
  ) {
    return only
  }
  return new Usage(
    {
      inputTokens: tally.inputTokens,
      cachedInputTokens: tally.cachedInputTokens,
      outputTokens: tally.outputTokens,
      reasoningTokens: tally.reasoningTokens,
      ...(tally.audioInputTokens === undefined ? {} : { audioInputTokens: tally.audioInputTokens })
    },
    { disableValidation: true }
  )
}

/** An embedding call's space and input count (its command's messages are its inputs). */
const embeddingEvidenceOf = (call: Call): Evidence["embedding"] => {
  const space = call.compiled?.workflow.embedding
  return space === undefined
    ? undefined
    : { family: space.family, dimensions: space.dimensions, inputs: call.command.messages.length }
}

/**
 * The call's escalations for its evidence: the command's (in the decision; without its `to` when no
 * attempt was made on that target), then those inside the call.
 */
const escalationsOf = (call: Call): ReadonlyArray<Escalation> | undefined => {
  const routed = call.holds.route?.escalation
  const decided = routed?.to === undefined || ranOn(call.tally.attempts, routed.to) ? routed : withoutTo(routed)
  const inside = call.tally.escalations
  if (decided === undefined) return inside === undefined ? undefined : inside.slice()
  return inside === undefined ? [decided] : [decided, ...inside]
}

const reasonOf = (f: Failure): string | undefined => {
  switch (f._tag) {
    case "ProviderUnavailable":
    case "InvalidRequest":
    case "ProviderRejected":
    case "PolicyViolation":
      return f.reason
    case "Refusal":
      return f.source
    case "DeadlineExceeded":
      return f.stage
    case "StoreError":
      return f.store
    default:
      return undefined
  }
}

/** The kind of a defect (`RangeError`, …), never its message. */
export const defectKind = (defect: unknown): string => (defect instanceof Error ? defect.name : typeof defect)

/**
 * Builds the call's one CallRecord and hands it to its agent run, telemetry, the recorder and the
 * workflow's lifecycle hooks. Neither the recorder nor a hook changes the call's outcome.
 */
export const recordCall = (
  ctx: EngineContext,
  call: Call,
  exit: Exit.Exit<ModelResult, Failure>,
  interrupted: boolean,
  at: number
): Effect.Effect<void> => {
  const { tally, holds } = call
  const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
  const success = Exit.isSuccess(exit)
  const evidence = success && holds.result !== undefined ? holds.result.evidence : evidenceOf(call, undefined, at)
  const callRecord = {
    tenant: call.command.tenant,
    mode: call.mode,
    outcome: success
      ? evidence.degraded
        ? "degraded"
        : "success"
      : interrupted
        ? "cancelled"
        : tally.committed
          ? "incomplete"
          : "failed",
    errorTag: failure?._tag,
    errorReason: failure !== undefined ? reasonOf(failure) : undefined,
    finishReason: success ? exit.value.finishReason : undefined,
    evidence,
    settlement: holds.settlement?.pending === true ? "pending" : undefined
  } satisfies CallRecord
  const run = call.run
  if (run !== undefined) {
    // The run's money: what the call held goes back, what it spent is spent.
    run.reserved -= holds.runReserved
    holds.runReserved = 0
    run.spent += tally.spent
    // Refused by the run (exhausted, another tenant's): not one of its steps, no PostModel.
    const refused =
      failure?._tag === "RunExhausted" || (failure?._tag === "InvalidRequest" && failure.reason === "run_tenant")
    if (!refused) {
      run.records.push(callRecord)
      if (run.events !== undefined)
        run.events.unsafeOffer(RunEvents.postModel(callRecord, success ? exit.value : undefined, at))
    }
  }
  const route = holds.route
  const labels = call.config.labels
  const segment = call.command.segment ?? route?.compiled.workflow.segment
  Report.unsafeEndCall(ctx.metricLabels, call.span, callRecord, {
    target: holds.answered ?? tally.lastTarget ?? route?.targets[0],
    workflow: route?.compiled.workflow.name,
    maxOutputTokens: tally.lastMaxOutputTokens,
    permitWaitMs: holds.permitWaitMs,
    tenantLabel: declaredTenant(ctx, labels, call.command.tenant) ? call.command.tenant : "other",
    segmentLabel: segment === undefined ? "none" : labels?.segments.has(segment) === true ? segment : "other"
  })
  // The recorder is the application's: whatever it does, it never changes the call's outcome.
  const recording = ctx.recorder.record(callRecord)
  // A recorder that answered at once (a sink that buffers, or none) has nothing to catch.
  const recorded =
    Exit.isExit(recording) && Exit.isSuccess(recording)
      ? recording
      : Effect.catchAllCause(recording, (cause) =>
          Effect.logError(`modelgate: the call recorder failed for ${call.id} (${defectKind(Cause.squash(cause))})`)
        )
  // Lifecycle features (canary controller, quality signals, shadow): one hook per settled call,
  // only for a workflow that uses one; it never changes the call's outcome either.
  const compiled = route?.compiled
  const lifecycle = ctx.lifecycle
  const observed =
    compiled?.lifecycle === undefined || lifecycle === undefined
      ? recorded
      : Effect.zipRight(
          recorded,
          Effect.catchAllCause(
            lifecycle.settled(compiled, callRecord, call.command, holds.result, route?.inputTokens),
            (cause) =>
              Effect.logError(`modelgate: a lifecycle hook failed for ${call.id} (${defectKind(Cause.squash(cause))})`)
          )
        )
  return Report.outsideCallSpanEvents(call.span, observed)
}

/** Whether `tenant` may be a metric label: the configuration or the telemetry settings name it. */
const declaredTenant = (ctx: EngineContext, labels: MetricLabelValues | undefined, tenant: string): boolean =>
  labels?.tenants.has(tenant) === true || ctx.telemetry.metricTenants?.includes(tenant) === true
