/**
 * How the pipeline reports a call: its span (only when a tracer is installed), attempt spans, and
 * the metric updates from its CallRecord. Names and metrics are public in `Telemetry.ts`; these
 * helpers are the engine's, not API.
 */
import { Effect, Exit, FiberRef, MetricLabel, Tracer } from "effect"
import { unitsPerCurrency } from "../BudgetStore.js"
import type { AttemptRecord, CallRecord } from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import { Attr, metrics, type Settings, SpanName } from "../Telemetry.js"

/** `gen_ai.operation.name` of every call but embeddings (`embeddings`): a chat-style completion. */
const operationName = "chat"

/** Call-span attributes of the route decision (issue 14): its id, selection reason and escalations. */
export const routeAttr = {
  id: "modelgate.route.id",
  selectionReason: "modelgate.route.selection_reason",
  escalations: "modelgate.route.escalations"
} as const

// ---------------------------------------------------------------------------------------------
// Spans
// ---------------------------------------------------------------------------------------------

/**
 * Runs `f` inside the span of one logical call and hands it the span, so the end of the call can
 * annotate it ({@link annotateCall}). Attributes known up front are set when the span starts.
 */
export const withCallSpan = <A, E, R>(
  settings: Settings,
  start: {
    readonly mode: "generate" | "stream" | "embed"
    readonly callId: string
    readonly workflow: string
    readonly tenant: string
    readonly requestId?: string | undefined
  },
  f: (span: Tracer.Span) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  const attributes: Record<string, unknown> = {
    [Attr.operationName]: start.mode === "embed" ? "embeddings" : operationName,
    [Attr.mode]: start.mode,
    [Attr.callId]: start.callId,
    [Attr.workflow]: start.workflow
  }
  if (start.requestId !== undefined) attributes[Attr.requestId] = start.requestId
  const t = settings.tenant
  if (t._tag === "Plain") attributes[Attr.tenant] = start.tenant
  else if (t._tag === "Hashed") attributes[Attr.tenantHash] = t.hash(start.tenant)
  return Effect.useSpan(
    start.mode === "stream" ? SpanName.stream : start.mode === "embed" ? SpanName.embed : SpanName.generate,
    { attributes, captureStackTrace: false },
    (span) => Effect.withParentSpan(f(span), span)
  )
}

/**
 * Runs one provider attempt inside a `modelgate.attempt` span (kind `client`). An attempt that
 * failed ends its span with status ERROR ({@link endFailedAttempt}), although the attempt's effect
 * succeeds (the pipeline takes a failed attempt as a value, to retry or fall back).
 */
export const withAttemptSpan = <A, E, R>(
  target: ModelTarget,
  attempt: number,
  maxOutputTokens: number,
  f: (span: Tracer.Span) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.useSpan(
    SpanName.attempt,
    {
      kind: "client",
      captureStackTrace: false,
      attributes: {
        [Attr.operationName]: operationName,
        [Attr.target]: target.ref,
        [Attr.providerName]: target.provider,
        [Attr.system]: target.provider,
        [Attr.requestModel]: target.model,
        [Attr.attemptNumber]: attempt,
        [Attr.requestMaxTokens]: maxOutputTokens
      }
    },
    (span) => Effect.tap(Effect.withParentSpan(f(span), span), () => endFailedAttempt(span))
  )

/**
 * Ends the span of a failed attempt (its `modelgate.attempt.outcome` neither `success` nor
 * `cancelled`) with a failure exit, which every Effect tracer exports as status ERROR, with an
 * `exception` event whose type is the attempt's error tag and whose message names its outcome:
 * closed sets only, never a provider's message. `Effect.useSpan` then leaves the ended span as it
 * is. A cancelled attempt ends as Effect's tracers end an interruption.
 */
const endFailedAttempt = (span: Tracer.Span): Effect.Effect<void> => {
  const outcome = span.attributes.get(Attr.attemptOutcome)
  if (typeof outcome !== "string" || outcome === "success" || outcome === "cancelled") return Effect.void
  const tag = span.attributes.get(Attr.errorType)
  return Effect.flatMap(FiberRef.get(FiberRef.currentTracerTimingEnabled), (timing) =>
    Effect.clockWith((clock) =>
      Effect.sync(() =>
        span.end(
          timing ? clock.unsafeCurrentTimeNanos() : BigInt(0),
          Exit.fail(attemptFailure(outcome, typeof tag === "string" ? tag : undefined))
        )
      )
    )
  )
}

/** The error a failed attempt's span ends with: the error tag as its name, the outcome as its message, no stack. */
const attemptFailure = (outcome: string, tag: string | undefined): Error => {
  const error = new Error(`attempt ${outcome}`)
  error.name = tag ?? "AttemptFailed"
  error.stack = `${error.name}: ${error.message}`
  return error
}

/** Sets `key` unless the value is absent: an attribute never carries `undefined` (exported as "undefined"). */
const set = (span: Tracer.Span, key: string, value: string | number | boolean | undefined) => {
  if (value !== undefined) span.attribute(key, value)
}

/**
 * Sets `key` to a list of strings, as an array attribute (an OpenTelemetry array attribute once
 * exported; see `@modelgate/adapters/opentelemetry` for the SDK bridge), never as text.
 */
const setList = (span: Tracer.Span, key: string, values: ReadonlyArray<string>) => {
  span.attribute(key, values)
}

/**
 * Sets the end-of-attempt attributes from its record.
 */
export const annotateAttempt = (span: Tracer.Span, record: AttemptRecord): void => {
  span.attribute(Attr.attemptOutcome, record.outcome)
  span.attribute(Attr.latencyMs, record.latencyMs)
  span.attribute(Attr.attemptStartOffsetMs, record.startOffsetMs)
  span.attribute(Attr.attemptTimeoutMs, record.timeoutMs)
  set(span, Attr.errorType, record.errorTag)
  set(span, Attr.httpStatus, record.httpStatus)
  set(span, Attr.providerRequestId, record.providerRequestId)
  set(span, Attr.ttftMs, record.ttftMs)
  set(span, Attr.retryAfterMs, record.retryAfterMs)
  set(span, Attr.possiblyProcessed, record.possiblyProcessed)
  set(span, Attr.responseModel, record.modelVersion)
  set(span, Attr.costUsd, record.cost)
  const u = record.usage
  if (u !== undefined) {
    span.attribute(Attr.inputTokens, u.inputTokens)
    span.attribute(Attr.outputTokens, u.outputTokens)
    span.attribute(Attr.cachedInputTokens, u.cachedInputTokens)
    span.attribute(Attr.reasoningTokens, u.reasoningTokens)
  }
}

/**
 * What the end of a call knows besides its record.
 */
export interface CallEnd {
  /** The target that answered, else the last one attempted, else the first eligible one. */
  readonly target: ModelTarget | undefined
  /** The configured workflow's name; `undefined` when the command named no configured workflow (label `unknown`). */
  readonly workflow: string | undefined
  /** Output cap of the last attempt. */
  readonly maxOutputTokens: number | undefined
  /** Time spent waiting for a concurrency permit, when one was requested. */
  readonly permitWaitMs: number | undefined
  /** The tenant as a metric label: the id when the configuration names it, else `other`. */
  readonly tenantLabel: string
  /** The task segment as a metric label: one the configuration names, `other`, or `none`. */
  readonly segmentLabel: string
}

/** Time to first token of a call: when the delivered attempt's first token came, from call start. */
const callTtft = (record: CallRecord): number | undefined => {
  const attempts = record.evidence.attempts
  for (let i = attempts.length - 1; i >= 0; i--) {
    const a = attempts[i]!
    if (a.ttftMs !== undefined) return a.startOffsetMs + a.ttftMs
  }
  return undefined
}

/**
 * Sets the end-of-call attributes from the call's record.
 */
export const annotateCall = (span: Tracer.Span, record: CallRecord, end: CallEnd): void => {
  const e = record.evidence
  const t = end.target
  span.attribute(Attr.outcome, record.outcome)
  span.attribute(Attr.policyVersion, e.policyVersion)
  span.attribute(Attr.promptId, e.promptId)
  span.attribute(Attr.promptVersion, e.promptVersion)
  set(span, Attr.schemaVersion, e.schemaVersion)
  set(span, Attr.pricingVersion, e.pricingVersion)
  if (t !== undefined) {
    span.attribute(Attr.providerName, t.provider)
    span.attribute(Attr.system, t.provider)
    span.attribute(Attr.requestModel, t.model)
  }
  set(span, Attr.target, e.target)
  // Agent runs (absent outside a run).
  set(span, "modelgate.run_id", e.runId)
  set(span, "modelgate.run.step", e.step)
  // Embeddings (absent for other calls): the vector length and how many inputs.
  set(span, "gen_ai.embeddings.dimension.count", e.embedding?.dimensions)
  set(span, "modelgate.embedding.inputs", e.embedding?.inputs)
  set(span, Attr.modelVersion, e.modelVersion)
  set(span, Attr.responseModel, e.modelVersion)
  set(span, Attr.requestMaxTokens, end.maxOutputTokens)
  if (record.finishReason !== undefined) setList(span, Attr.responseFinishReasons, [record.finishReason])
  setList(span, Attr.eligible, e.eligible)
  // The route decision: ids and reasons only.
  set(span, routeAttr.id, e.routeId)
  set(span, routeAttr.selectionReason, e.selectionReason)
  if (e.escalations !== undefined && e.escalations.length > 0) {
    setList(
      span,
      routeAttr.escalations,
      e.escalations.map((x) => `${x.signal}:${x.from}>${x.to ?? "none"}`)
    )
  }
  if (e.excluded.length > 0)
    setList(
      span,
      Attr.excluded,
      e.excluded.map((x) => `${x.target}:${x.reason}`)
    )
  span.attribute(Attr.fallbackUsed, e.fallbackUsed)
  span.attribute(Attr.degraded, e.degraded)
  set(span, Attr.errorType, record.errorTag)
  set(span, Attr.errorReason, record.errorReason)
  span.attribute(Attr.retryCount, e.retryCount)
  if (e.retryBudgetExhausted) span.attribute(Attr.retryBudgetExhausted, true)
  span.attribute(Attr.attemptCount, e.attempts.length)
  span.attribute(Attr.latencyMs, e.totalLatencyMs)
  set(span, Attr.ttftMs, callTtft(record))
  set(span, Attr.permitWaitMs, end.permitWaitMs)
  span.attribute(Attr.inputTokens, e.usage.inputTokens)
  span.attribute(Attr.outputTokens, e.usage.outputTokens)
  span.attribute(Attr.cachedInputTokens, e.usage.cachedInputTokens)
  span.attribute(Attr.reasoningTokens, e.usage.reasoningTokens)
  span.attribute(Attr.costUsd, e.cost.actual)
  // Absent when nothing was estimated (no count was needed).
  set(span, Attr.costEstimatedUsd, e.cost.estimated)
  span.attribute(Attr.costReservedUsd, e.cost.reserved)
  set(span, Attr.schemaValid, e.schemaValid)
}

/**
 * Label sets are cached so that every update reuses the same array: Effect caches the metric hook
 * per label array, so a stable array makes an update a lookup plus the update. The cache is a trie
 * keyed by the label values themselves (configuration strings whose hashes V8 keeps), which avoids
 * building and hashing a key string per update. Values come from the configuration or closed sets,
 * so it stays small; it is still capped.
 */
type Labels = ReadonlyArray<MetricLabel.MetricLabel>
interface Trie {
  readonly children: Map<string, Trie>
  labels: Labels | undefined
}
const newTrie = (): Trie => ({ children: new Map(), labels: undefined })

/**
 * Label sets for one list of (at most five) label keys, by their values in the keys' order. Fixed
 * parameters rather than a rest array: no array per lookup (a call makes about a dozen).
 */
export type LabelCache = (v0: string, v1?: string, v2?: string, v3?: string, v4?: string) => Labels

/** Most label keys of one {@link LabelCache}. */
const maxLabelKeys = 5

/** A cache of label sets for one list of label keys. */
const labelCache = (keys: ReadonlyArray<string>): LabelCache => {
  if (keys.length > maxLabelKeys) throw new Error(`labelCache: at most ${maxLabelKeys} label keys`)
  const depth = keys.length
  let root = newTrie()
  let count = 0
  /** The child of `node` for `v`, added when missing (a full cache starts over). */
  const step = (node: Trie, v: string): Trie => {
    let next = node.children.get(v)
    if (next === undefined) {
      if (count >= 10_000) {
        root = newTrie()
        count = 0
      }
      next = newTrie()
      node.children.set(v, next)
    }
    return next
  }
  return (v0, v1 = "", v2 = "", v3 = "", v4 = ""): Labels => {
    let node = step(root, v0)
    if (depth > 1) node = step(node, v1)
    if (depth > 2) node = step(node, v2)
    if (depth > 3) node = step(node, v3)
    if (depth > 4) node = step(node, v4)
    if (node.labels === undefined) {
      const values = [v0, v1, v2, v3, v4]
      node.labels = keys.map((k, i) => MetricLabel.make(k, values[i]!))
      count++
    }
    return node.labels
  }
}

/**
 * The label caches of one gateway (or one tool loop): created with it, so no label set outlives
 * the gateway that made it and two gateways share no state.
 */
export interface MetricLabels {
  readonly call: LabelCache
  readonly latency: LabelCache
  readonly workflow: LabelCache
  readonly attempt: LabelCache
  readonly attemptLatency: LabelCache
  readonly target: LabelCache
  readonly token: LabelCache
  readonly spend: LabelCache
  readonly fallback: LabelCache
  readonly segment: LabelCache
}

/** Makes the label caches of one gateway; built once, when the gateway is. */
export const makeMetricLabels = (): MetricLabels => ({
  call: labelCache([Attr.workflow, Attr.route, Attr.outcome, Attr.errorType, Attr.mode]),
  latency: labelCache([Attr.workflow, Attr.route, Attr.outcome, Attr.mode]),
  workflow: labelCache([Attr.workflow]),
  attempt: labelCache([Attr.workflow, Attr.target, Attr.attemptOutcome]),
  attemptLatency: labelCache([Attr.target, Attr.attemptOutcome]),
  target: labelCache([Attr.workflow, Attr.target]),
  token: labelCache([Attr.workflow, Attr.target, Attr.tokenType]),
  spend: labelCache([Attr.tenant, Attr.policyVersion]),
  fallback: labelCache([Attr.workflow, Attr.fallbackFrom, Attr.fallbackTo]),
  segment: labelCache([Attr.workflow, Attr.segment, Attr.outcome, Attr.policyVersion])
})

/** Makes the label cache of a tool loop's failure counts; built once per `ToolLoop.run`. */
export const makeToolLabels = (): LabelCache => labelCache([Attr.tool, Attr.toolFailureKind])

/** An amount of the currency in store units (the budget store's integer billionths). */
const unitsOf = (amount: number): number => Math.round(amount * unitsPerCurrency)

/**
 * The production dimensions of one finished call: its tenant's spend (estimated and actual, in
 * store units) by policy version, its outcome by task segment, and each move from one target to
 * another between consecutive attempts.
 */
const recordDimensions = (labels: MetricLabels, record: CallRecord, end: CallEnd, workflow: string): void => {
  const e = record.evidence
  const m = metrics
  const spend = labels.spend(end.tenantLabel, e.policyVersion)
  if (e.cost.estimated !== undefined && e.cost.estimated > 0) {
    m.tenantSpendEstimated.unsafeUpdate(unitsOf(e.cost.estimated), spend)
  }
  if (e.cost.actual > 0) m.tenantSpendActual.unsafeUpdate(unitsOf(e.cost.actual), spend)
  m.segmentOutcomes.unsafeUpdate(1, labels.segment(workflow, end.segmentLabel, record.outcome, e.policyVersion))
  for (let i = 1; i < e.attempts.length; i++) {
    const from = e.attempts[i - 1]!.target
    const to = e.attempts[i]!.target
    if (from !== to) m.fallbackRoutes.unsafeUpdate(1, labels.fallback(workflow, from, to))
  }
}

/**
 * Counts one failed tool call of a tool loop: `tool` is a configured tool's name (`unknown` for a
 * name the model made up), `kind` a closed set.
 */
export const unsafeRecordToolFailure = (
  labels: LabelCache,
  tool: string,
  kind: "unknown_tool" | "invalid_arguments" | "failed" | "ledger"
): void => {
  metrics.toolFailures.unsafeUpdate(1, labels(tool, kind))
}

/**
 * Updates the metrics of one finished call from its record. Synchronous: call it where the record
 * is built.
 */
export const unsafeRecordMetrics = (labels: MetricLabels, record: CallRecord, end: CallEnd): void => {
  const e = record.evidence
  const workflow = end.workflow ?? "unknown"
  const route: string = e.target ?? "none"
  const m = metrics
  m.calls.unsafeUpdate(1, labels.call(workflow, route, record.outcome, record.errorTag ?? "none", record.mode))
  m.callLatency.unsafeUpdate(e.totalLatencyMs, labels.latency(workflow, route, record.outcome, record.mode))
  const byWorkflow = labels.workflow(workflow)
  if (e.retryCount > 0) m.retries.unsafeUpdate(e.retryCount, byWorkflow)
  if (e.fallbackUsed) m.fallbacks.unsafeUpdate(1, byWorkflow)
  if (e.degraded) m.degraded.unsafeUpdate(1, byWorkflow)
  if (record.errorTag === "BudgetExceeded") m.budgetRejections.unsafeUpdate(1, byWorkflow)
  if (end.permitWaitMs !== undefined) m.permitWait.unsafeUpdate(end.permitWaitMs, byWorkflow)
  recordDimensions(labels, record, end, workflow)
  // Usage and cost per attempt target; what no attempt carries (input billed for an attempt cut
  // by cancellation) goes to the last target attempted, so the totals match the evidence.
  let input = 0
  let cached = 0
  let output = 0
  let reasoning = 0
  let cost = 0
  let last: string | undefined
  for (const a of e.attempts) {
    last = a.target
    m.attempts.unsafeUpdate(1, labels.attempt(workflow, a.target, a.outcome))
    m.attemptLatency.unsafeUpdate(a.latencyMs, labels.attemptLatency(a.target, a.outcome))
    if (a.ttftMs !== undefined) m.ttft.unsafeUpdate(a.ttftMs, labels.target(workflow, a.target))
    if (a.usage !== undefined) {
      addTokens(
        labels,
        workflow,
        a.target,
        a.usage.inputTokens,
        a.usage.cachedInputTokens,
        a.usage.outputTokens,
        a.usage.reasoningTokens
      )
      input += a.usage.inputTokens
      cached += a.usage.cachedInputTokens
      output += a.usage.outputTokens
      reasoning += a.usage.reasoningTokens
    }
    if (a.cost !== undefined && a.cost > 0) {
      m.cost.unsafeUpdate(a.cost, labels.target(workflow, a.target))
      cost += a.cost
    }
  }
  const rest = last ?? end.target?.ref
  if (rest !== undefined) {
    const u = e.usage
    addTokens(
      labels,
      workflow,
      rest,
      u.inputTokens - input,
      u.cachedInputTokens - cached,
      u.outputTokens - output,
      u.reasoningTokens - reasoning
    )
    // Float sums: ignore differences below a millionth of a cent.
    if (e.cost.actual - cost > 1e-8) m.cost.unsafeUpdate(e.cost.actual - cost, labels.target(workflow, rest))
  }
}

const addTokens = (
  labels: MetricLabels,
  workflow: string,
  target: string,
  input: number,
  cached: number,
  output: number,
  reasoning: number
) => {
  const m = metrics.tokens
  if (input > 0) m.unsafeUpdate(input, labels.token(workflow, target, "input"))
  if (cached > 0) m.unsafeUpdate(cached, labels.token(workflow, target, "cached_input"))
  if (output > 0) m.unsafeUpdate(output, labels.token(workflow, target, "output"))
  if (reasoning > 0) m.unsafeUpdate(reasoning, labels.token(workflow, target, "reasoning"))
}

/**
 * Runs `self` (the CallRecorder) so that spans it creates stay children of the call span, but log
 * lines it writes do not become events of the call span. Effect's default tracer logger turns every
 * log line into an event of the current span; the log recorder's line carries the whole record
 * (tenant id included), which would bypass {@link TelemetrySettings} and cost a JSON rendering per
 * call. The tracer logger skips external spans, so the recorder runs under an external span with
 * the call span's ids.
 */
export const outsideCallSpanEvents = <A, E, R>(
  span: Tracer.Span | undefined,
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  span === undefined
    ? self
    : Effect.withParentSpan(
        self,
        Tracer.externalSpan({ spanId: span.spanId, traceId: span.traceId, sampled: span.sampled })
      )

/**
 * Annotates the call span and updates the metrics of one finished call.
 */
export const unsafeEndCall = (
  labels: MetricLabels,
  span: Tracer.Span | undefined,
  record: CallRecord,
  end: CallEnd
): void => {
  if (span !== undefined) annotateCall(span, record, end)
  unsafeRecordMetrics(labels, record, end)
}
