/**
 * Shadow traffic: a sampled share of a workflow's successful calls is also sent to a candidate
 * target, in a fiber of its own forked when the call settles, so the caller's answer, latency and
 * errors never depend on it. A shadow call never runs for a command that offers side-effecting
 * tools, never goes to a target outside the call's regions or data class (or lacking what the call
 * needs), runs at most `maxConcurrent` at a time per workflow (more are dropped), is charged to the
 * budget of its own tenant (`budgetTenant`; a call that does not fit is dropped), and ends in a
 * {@link ShadowRecord} — outcome, schema validity, agreement with the primary's structured fields,
 * latency and cost, never content — handed to the {@link ShadowRecorder}.
 *
 * A shadow call is an ordinary attempt on its candidate: it takes the candidate's concurrency
 * permit (when the target has a cap) and its provider rate-limit headroom, at once or not at all —
 * it never waits, so it never takes what a caller waits for, and one that finds none is dropped
 * and counted (`concurrency`, `rate_limit`). Its attempt is bounded by the candidate's
 * `perAttemptTimeout` (a candidate that hangs is cut then, as `timeout`), and whatever its exit —
 * an answer, a timeout, a defect, an adapter that throws — its permit, rate-limit take and
 * reservation are given back (the reservation committed with what it cost: its input once sent).
 * The input is the primary's count when the router made one, else counted in slices that yield.
 *
 * @since 0.2.0
 */
import { Clock, Context, Duration, Effect, Either, Layer, Metric, Ref, Schema } from "effect"
import type { Budgets, Reservation } from "./Budgets.js"
import type * as Concurrency from "./Concurrency.js"
import type { Classified } from "./internal/disposition.js"
import type { CompiledWorkflow } from "./GatewayConfig.js"
import * as Attempt from "./internal/attempt.js"
import { validateOutput } from "./internal/output.js"
import * as Options from "./internal/options.js"
import * as RateLimit from "./internal/rateLimit.js"
import { type ModelCommand, TenantId } from "./ModelCommand.js"
import type { ModelResult, Usage } from "./ModelResult.js"
import type { ModelTarget } from "./ModelTarget.js"
import { TargetRef } from "./ModelTarget.js"
import { costAt, costOf, outputCapAt } from "./Pricing.js"
import { inputTokensAt } from "./internal/affordable.js"
import type { ProviderAdapter } from "./ProviderAdapter.js"
import type * as RateLimitStore from "./RateLimitStore.js"
import { ExcludedTarget } from "./RouteDecision.js"
import { checkTarget } from "./internal/router/engine.js"
import { sampled } from "./internal/shadowSample.js"
import * as TokenEstimator from "./TokenEstimator.js"
import { shadowMetrics as metrics } from "./internal/metrics.js"

/**
 * How one shadow call went (no content).
 *
 * @since 0.2.0
 * @category Models
 */
export class ShadowRecord extends Schema.Class<ShadowRecord>("@modelgate/core/ShadowRecord")({
  /** The primary call it shadowed. */
  callId: Schema.String,
  workflow: Schema.String,
  candidate: TargetRef,
  /** The target that answered the primary call. */
  primary: Schema.optional(TargetRef),
  outcome: Schema.Literal("success", "invalid_output", "refusal", "failed", "timeout"),
  /** The error tag of a failed shadow call. */
  errorTag: Schema.optional(Schema.String),
  /** The candidate's answer against the workflow's schema (absent for free text). */
  schemaValid: Schema.optional(Schema.Boolean),
  /** Top-level fields of the primary's structured value the candidate's value equals, over those compared. */
  agreement: Schema.optional(Schema.Number),
  fieldsCompared: Schema.optional(Schema.Int),
  latencyMs: Schema.Number,
  cost: Schema.Number,
  /** Epoch millis the shadow call started. */
  startedAt: Schema.Number
}) {}

/**
 * Where shadow records go.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Recorder {
  readonly record: (record: ShadowRecord) => Effect.Effect<void>
}

/**
 * @since 0.2.0
 * @category Context
 */
export class ShadowRecorder extends Context.Tag("@modelgate/core/ShadowRecorder")<ShadowRecorder, Recorder>() {}

/**
 * One log line per shadow call (the gateway's default).
 *
 * @since 0.2.0
 * @category Layers
 */
const recorderLog: Recorder = {
  record: (r) =>
    Effect.annotateLogs(Effect.logInfo("modelgate shadow call"), {
      callId: r.callId,
      workflow: r.workflow,
      candidate: r.candidate,
      outcome: r.outcome,
      ...(r.agreement === undefined ? {} : { agreement: r.agreement }),
      latencyMs: r.latencyMs,
      cost: r.cost
    })
}

/**
 * @since 0.2.0
 * @category Layers
 */
export const layerLog: Layer.Layer<ShadowRecorder> = Layer.succeed(ShadowRecorder, recorderLog)

/**
 * A recorder that keeps every record in memory.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Memory extends Recorder {
  readonly records: Effect.Effect<ReadonlyArray<ShadowRecord>>
}

/**
 * @since 0.2.0
 * @category Context
 */
export class MemoryShadowRecorder extends Context.Tag("@modelgate/core/ShadowRecorder/Memory")<
  MemoryShadowRecorder,
  Memory
>() {}

/**
 * Keeps records in memory (tests, demos); provides both tags.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<ShadowRecorder | MemoryShadowRecorder> = Layer.effectContext(
  Effect.map(Ref.make<ReadonlyArray<ShadowRecord>>([]), (ref) => {
    const memory: Memory = { record: (r) => Ref.update(ref, (all) => [...all, r]), records: Ref.get(ref) }
    return Context.make(MemoryShadowRecorder, memory).pipe(Context.add(ShadowRecorder, memory))
  })
)

/**
 * Share of the top-level fields of `primary` (a plain object) whose value `candidate` has too;
 * `undefined` when either is not a plain object or `primary` has no fields.
 *
 * @since 0.2.0
 * @category Utils
 *
 * @internal
 */
export const agreementOf = (
  primary: unknown,
  candidate: unknown
): { readonly agreement: number; readonly fields: number } | undefined => {
  const isObject = (u: unknown): u is Record<string, unknown> =>
    typeof u === "object" && u !== null && !Array.isArray(u)
  if (!isObject(primary) || !isObject(candidate)) return undefined
  const keys = Object.keys(primary)
  if (keys.length === 0) return undefined
  let same = 0
  for (const k of keys) {
    if (Object.hasOwn(candidate, k) && JSON.stringify(primary[k]) === JSON.stringify(candidate[k])) same++
  }
  return { agreement: Math.round((same / keys.length) * 10_000) / 10_000, fields: keys.length }
}

/**
 * Starts shadow calls for a gateway.
 *
 * @since 0.2.0
 * @category Models
 *
 * @internal
 */
export interface Runner {
  /**
   * When `primary` is sampled and allowed, forks its shadow call and returns at once; otherwise
   * counts why not. Never fails.
   */
  readonly start: (
    compiled: CompiledWorkflow,
    target: ModelTarget,
    command: ModelCommand,
    primary: ModelResult,
    /** The primary's input count (before any safety factor) when the router made one: not counted again. */
    counted?: number | undefined
  ) => Effect.Effect<void>
}

/** How a shadow attempt went, judged as the pipeline judges a production attempt. */
const judge = (
  compiled: CompiledWorkflow,
  target: ModelTarget,
  primary: ModelResult,
  ended: Classified
): {
  readonly outcome: ShadowRecord["outcome"]
  readonly errorTag: string | undefined
  readonly schemaValid: boolean | undefined
  readonly agreement: { readonly agreement: number; readonly fields: number } | undefined
} => {
  const none = { errorTag: undefined, schemaValid: undefined, agreement: undefined }
  if (ended.failure !== undefined) {
    if (ended.failure._tag === "Refusal") return { ...none, outcome: "refusal" }
    // Sent and not answered within its own limit.
    if (ended.error === undefined && ended.outcome === "timeout") return { ...none, outcome: "timeout" }
    return { ...none, outcome: "failed", errorTag: ended.error !== undefined ? ended.error._tag : ended.failure._tag }
  }
  const answered = ended.response
  if (compiled.decode === undefined || answered.toolCalls.length > 0) return { ...none, outcome: "success" }
  // Judged as the pipeline judges a production answer (a truncated answer is invalid too).
  const validated = validateOutput(compiled, target, answered)
  return Either.isRight(validated)
    ? {
        ...none,
        outcome: "success",
        schemaValid: true,
        agreement: agreementOf(primary.content.value, validated.right.value)
      }
    : { ...none, outcome: "invalid_output", schemaValid: false }
}

/** What a shadow call holds while it runs: given back by its one exit handler, whatever the exit. */
interface ShadowHolds {
  permit: Concurrency.Permit | undefined
  rated: RateLimit.Held | undefined
  reservation: Reservation | undefined
  /** What the reservation is committed with: the input once sent, the attempt's cost once it ended. */
  spent: number
  /** The attempt's reported usage (the rate limit's correction). */
  usage: Usage | undefined
  sent: boolean
}

/** Gives back what `holds` holds: the permit, the rate limit (corrected to the usage), the reservation (settled). */
const giveBack = (holds: ShadowHolds): Effect.Effect<void> =>
  Effect.suspend(() => {
    const { permit, rated, reservation } = holds
    holds.permit = undefined
    holds.rated = undefined
    holds.reservation = undefined
    if (permit !== undefined) permit.release()
    if (rated !== undefined) RateLimit.settle(rated, holds.usage, holds.sent)
    return reservation === undefined ? Effect.void : Effect.asVoid(reservation.settle(holds.spent))
  })

/** What a {@link makeRunner} runner runs with. @internal */
export interface RunnerDeps {
  readonly adapter: (provider: string) => ProviderAdapter | undefined
  readonly budgets: Budgets["Type"]
  readonly recorder: Recorder
  readonly concurrency?: (() => Concurrency.Service) | undefined
  readonly rateLimits?: (() => RateLimitStore.Service | undefined) | undefined
}

/**
 * Takes what the shadow call needs before it is sent, at once or not at all (a shadow call never
 * waits, so it never takes what a caller is waiting for): the candidate's concurrency permit, its
 * rate-limit headroom, the shadow tenant's reservation. The reason of a drop, or `undefined`.
 */
const admit = (
  deps: RunnerDeps,
  target: ModelTarget,
  tenant: string,
  tokens: number,
  worst: number,
  holds: ShadowHolds
): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const concurrency = deps.concurrency?.()
    if (concurrency?.isCapped(target.ref)) {
      // `until` now: a permit free at once, or none (never queued behind callers).
      const permit = yield* Effect.either(concurrency.acquireTarget(target.ref, now))
      if (Either.isLeft(permit) || permit.right === undefined) return "concurrency"
      holds.permit = permit.right
    }
    const store = deps.rateLimits?.()
    if (store !== undefined && target.rateLimit !== undefined) {
      const taken = yield* Effect.either(RateLimit.take(store, target, target.rateLimit, tokens, now))
      if (Either.isLeft(taken) || taken.right instanceof ExcludedTarget) return "rate_limit"
      holds.rated = taken.right
    }
    const reservation = yield* Effect.either(deps.budgets.reserve(TenantId.make(tenant), worst))
    if (Either.isLeft(reservation)) return "budget"
    holds.reservation = reservation.right
    return undefined
  })

/**
 * A runner over the gateway's adapters, budgets, concurrency caps, rate limits and recorder
 * (`concurrency` and `rateLimits` are read when a shadow call starts).
 *
 * @since 0.2.0
 * @category Constructors
 *
 * @internal
 */
export const makeRunner = (deps: RunnerDeps): Runner => {
  const inFlight = new Map<string, number>()
  const tagged = <A extends Metric.Metric.Counter<number>>(m: A, workflow: string, candidate: string) =>
    Metric.tagged(Metric.tagged(m, "workflow", workflow), "candidate", candidate)
  const drop = (workflow: string, candidate: string, reason: string) =>
    Metric.increment(Metric.tagged(tagged(metrics.dropped, workflow, candidate), "reason", reason))
  const run = (
    compiled: CompiledWorkflow,
    target: ModelTarget,
    command: ModelCommand,
    primary: ModelResult,
    adapter: ProviderAdapter,
    counted: number | undefined
  ): Effect.Effect<void> =>
    Effect.uninterruptibleMask((restore) => {
      const holds: ShadowHolds = {
        permit: undefined,
        rated: undefined,
        reservation: undefined,
        spent: 0,
        usage: undefined,
        sent: false
      }
      const body = Effect.gen(function* () {
        const w = compiled.workflow
        const shadow = w.shadow!
        // The call's options against the workflow's bounds, as the router resolved them for the primary.
        const options = Options.resolve(w, command)
        if (Either.isLeft(options)) return yield* drop(w.name, target.ref, "policy")
        // The primary's count when the router made one; otherwise counted here, in slices that yield.
        const estimated =
          counted ??
          (yield* restore(
            TokenEstimator.estimateInputYielding({
              messages: command.messages,
              tools: command.tools,
              outputJsonSchema: compiled.jsonSchema
            })
          ))
        const inputTokens = inputTokensAt(estimated, target)
        // Input + output within the shadow target's window, as a production attempt there.
        const cap = outputCapAt(command.maxOutputTokens, w.maxOutputTokens, target, inputTokens)
        if (cap < 1) return yield* drop(w.name, target.ref, "policy")
        const refused = yield* admit(
          deps,
          target,
          shadow.budgetTenant,
          inputTokens + cap,
          costAt(target, inputTokens, cap),
          holds
        )
        if (refused !== undefined) return yield* drop(w.name, target.ref, refused)
        // Built, bounded and classified by the pipeline's own attempt module: the same request
        // (sampling and provider options included) a production attempt on this target sends.
        const basis = { compiled, command, options: options.right }
        const perAttemptMs = Duration.toMillis(target.limits.perAttemptTimeout)
        const request = Attempt.requestOf(basis, target, command.messages, cap, perAttemptMs)
        const startedAt = yield* Clock.currentTimeMillis
        const until = startedAt + perAttemptMs
        // Sent: its input is likely billed, whatever happens next.
        const inputCost = costAt(target, inputTokens, 0)
        holds.sent = true
        holds.spent = inputCost
        // Interruptible: the attempt's own bound (its timeout) cuts a candidate that hangs.
        const exit = yield* Effect.exit(restore(Effect.suspend(() => Attempt.generateUntil(adapter, request, until))))
        const endedAt = yield* Clock.currentTimeMillis
        const ended = Attempt.classifyEnd(target, exit, startedAt, until, endedAt)
        const usage = ended.response?.usage ?? ended.error?.usage
        // Sent without a reported usage (cut by its timeout, a failure): its input was likely billed.
        const cost = usage === undefined ? inputCost : costOf(target, usage)
        holds.usage = usage
        holds.spent = cost
        yield* giveBack(holds)
        const judged = judge(compiled, target, primary, ended)
        const record = new ShadowRecord(
          {
            callId: primary.evidence.callId,
            workflow: w.name,
            candidate: target.ref,
            primary: primary.evidence.target,
            outcome: judged.outcome,
            errorTag: judged.errorTag,
            schemaValid: judged.schemaValid,
            agreement: judged.agreement?.agreement,
            fieldsCompared: judged.agreement?.fields,
            latencyMs: endedAt - startedAt,
            cost,
            startedAt
          },
          { disableValidation: true }
        )
        yield* Metric.increment(Metric.tagged(tagged(metrics.calls, w.name, target.ref), "outcome", judged.outcome))
        yield* restore(deps.recorder.record(record))
      })
      // Whatever the exit (a defect, an adapter that throws, an interruption): nothing is kept.
      return Effect.ensuring(body, giveBack(holds))
    })
  return {
    start: (compiled, target, command, primary, counted) =>
      Effect.suspend(() => {
        const w = compiled.workflow
        const shadow = w.shadow
        if (shadow === undefined || !sampled(primary.evidence.callId, shadow.share)) return Effect.void
        if (command.allowsStateChangingTools) return drop(w.name, target.ref, "side_effecting_tools")
        if (checkTarget(compiled, command, target, undefined, "generate") !== undefined) {
          return drop(w.name, target.ref, "policy")
        }
        const adapter = deps.adapter(target.provider)
        if (adapter === undefined) return drop(w.name, target.ref, "policy")
        const running = inFlight.get(w.name) ?? 0
        if (running >= shadow.maxConcurrent) return drop(w.name, target.ref, "load")
        inFlight.set(w.name, running + 1)
        const done = Effect.sync(() => inFlight.set(w.name, (inFlight.get(w.name) ?? 1) - 1))
        // Its own fiber: nothing of it is on the caller's path; whatever happens, it only logs.
        const body = run(compiled, target, command, primary, adapter, counted).pipe(
          // A defect's message may quote content: only that it happened is logged.
          Effect.catchAllCause(() => Effect.logWarning(`modelgate: shadow call for ${primary.evidence.callId} failed`)),
          Effect.ensuring(done)
        )
        // Forked from the settle handler's uninterruptible region: made interruptible, or its
        // attempt's timeout could never cut it.
        return Effect.asVoid(Effect.forkDaemon(Effect.interruptible(body)))
      })
  }
}
