/**
 * Quality signals: per workflow and target, what its answers were worth — online (invalid output
 * and repairs from the gateway's own calls, callers' `feedback`) and offline (eval results loaded
 * as data). A workflow with a `quality` policy reads them when it routes: a target whose rate of
 * invalid or rejected answers over the policy's window passes `demoteAbove` (after `minSamples`
 * calls) is demoted — its quality fit scored down by `demotion` — until the rate is back at or below
 * `recoverBelow`; past `excludeAbove` it is excluded (`QUALITY_REGRESSION`) until it recovers. Old
 * samples leave the window, so an excluded target recovers once its bad answers are older than
 * the window. An eval score on the workflow's segment below `minEvalScore` demotes it too. This is
 * about answers, not availability: breakers stay availability-only.
 *
 * @since 0.2.0
 */
import { Context, Duration, Effect, Layer, Metric, Schema } from "effect"
import type { Standing } from "./internal/lifecycle.js"
import type { CallRecord } from "./ModelResult.js"
import { Segment, TargetRef } from "./ModelTarget.js"
import { Name } from "./internal/fieldSchemas.js"
import type { QualityPolicy } from "./internal/workflowPolicies.js"
import { qualityMetrics as metrics } from "./internal/metrics.js"

/**
 * One offline eval result: a target's score on a task segment, from one eval version.
 *
 * @since 0.2.0
 * @category Models
 */
export class EvalResult extends Schema.Class<EvalResult>("@modelgate/core/EvalResult")({
  target: TargetRef,
  segment: Segment,
  score: Schema.Number.pipe(Schema.between(0, 1)),
  evalVersion: Name
}) {}

/**
 * What a caller says of an answer: `accepted: false` counts as a rejected answer of its target.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Feedback {
  readonly accepted: boolean
}

/**
 * A target's signals on a workflow over the policy's window.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Snapshot {
  readonly workflow: string
  readonly target: string
  readonly calls: number
  readonly invalidOutputRate: number
  readonly repairRate: number
  readonly rejectionRate: number
  /** The latest eval score on the workflow's segment, if one was loaded. */
  readonly evalScore: number | undefined
  readonly level: "ok" | "demoted" | "excluded"
}

/**
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  /** One settled call of a workflow with a `quality` policy: a sample per target that answered. */
  readonly record: (record: CallRecord, policy: QualityPolicy, segment: string | undefined) => Effect.Effect<void>
  /**
   * A caller's verdict on the call `callId` (one of the last 10,000 calls of a
   * workflow with a `quality` policy); `false` when the call is not known.
   */
  readonly feedback: (callId: string, feedback: Feedback) => Effect.Effect<boolean>
  /** Loads offline eval results (a later result for the same target and segment replaces it). */
  readonly loadEvals: (results: ReadonlyArray<EvalResult>) => Effect.Effect<void>
  /** The standing the router reads: `undefined` in good standing. Synchronous. */
  readonly standing: (
    workflow: string,
    target: string,
    policy: QualityPolicy,
    segment: string | undefined
  ) => Standing | undefined
  /** The target's signals on the workflow now. */
  readonly snapshot: (workflow: string, target: string, policy: QualityPolicy, segment: string | undefined) => Snapshot
}

/**
 * @since 0.2.0
 * @category Context
 */
export class QualitySignals extends Context.Tag("@modelgate/core/QualitySignals")<QualitySignals, Service>() {}

/**
 * Calls whose target `feedback` can still find (least recent forgotten first).
 *
 * @since 0.2.0
 * @category Constants
 *
 * @internal
 */
export const maxRememberedCalls = 10_000

/**
 * Samples kept per workflow and target at most (oldest dropped first).
 *
 * @since 0.2.0
 * @category Constants
 *
 * @internal
 */
export const maxSamples = 4_096

interface Sample {
  at: number
  invalid: boolean
  repaired: boolean
  rejected: boolean
  /** Still counted in its series (not yet out of the window or dropped for space). */
  live: boolean
}

/** A target's samples on a workflow in time order, from `head` on, with running counts (O(1) reads). */
interface Series {
  samples: Array<Sample>
  head: number
  invalid: number
  repaired: number
  rejected: number
  level: Snapshot["level"]
}

const push = (s: Series, x: Sample): void => {
  s.samples.push(x)
  if (x.invalid) s.invalid++
  if (x.repaired) s.repaired++
  if (x.rejected) s.rejected++
  if (s.samples.length - s.head > maxSamples) expireHead(s)
}

const expireHead = (s: Series): void => {
  const x = s.samples[s.head]!
  x.live = false
  if (x.invalid) s.invalid--
  if (x.repaired) s.repaired--
  if (x.rejected) s.rejected--
  s.head++
  // Compact once the dead prefix is most of the array.
  if (s.head > 1024 && s.head * 2 > s.samples.length) {
    s.samples = s.samples.slice(s.head)
    s.head = 0
  }
}

const keyOf = (workflow: string, target: string) => `${workflow}\u0000${target}`
const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

/**
 * Signals reading time from the `Clock` of the context they are made in.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make: Effect.Effect<Service> = Effect.gen(function* () {
  // long: the in-memory signals as a closure: the series and remembered calls its methods share
  const clock = yield* Effect.clock
  const series = new Map<string, Series>()
  interface Remembered {
    readonly workflow: string
    readonly target: string
    readonly sample: Sample
    readonly policy: QualityPolicy
    readonly segment: string | undefined
  }
  const calls = new Map<string, Remembered>()
  const evals = new Map<string, EvalResult>()
  const seriesOf = (key: string): Series => {
    let s = series.get(key)
    if (s === undefined) {
      s = { samples: [], head: 0, invalid: 0, repaired: 0, rejected: 0, level: "ok" }
      series.set(key, s)
    }
    return s
  }
  const compute = (workflow: string, target: string, policy: QualityPolicy, segment: string | undefined): Snapshot => {
    const s = series.get(keyOf(workflow, target))
    const since = clock.unsafeCurrentTimeMillis() - Duration.toMillis(policy.window)
    let n = 0
    let invalid = 0
    let repaired = 0
    let rejected = 0
    if (s !== undefined) {
      // Samples are in time order: the ones that left the window go from the head.
      while (s.head < s.samples.length && s.samples[s.head]!.at <= since) expireHead(s)
      n = s.samples.length - s.head
      invalid = s.invalid
      repaired = s.repaired
      rejected = s.rejected
    }
    const rate = n === 0 ? 0 : Math.max(invalid, rejected) / n
    const evalScore = segment === undefined ? undefined : evals.get(keyOf(target, segment))?.score
    const previous = s?.level ?? "ok"
    const recoverBelow = policy.recoverBelow ?? policy.demoteAbove / 2
    let level: Snapshot["level"] = "ok"
    if (n >= policy.minSamples) {
      if (policy.excludeAbove !== undefined && rate > policy.excludeAbove) level = "excluded"
      else if (rate > policy.demoteAbove || (previous !== "ok" && rate > recoverBelow)) level = "demoted"
    } else if (n > 0) {
      // Too few samples to judge: the standing stays; once every sample left the window, it is good.
      level = previous
    }
    if (level === "ok" && policy.minEvalScore !== undefined && evalScore !== undefined) {
      if (evalScore < policy.minEvalScore) level = "demoted"
    }
    return {
      workflow,
      target,
      calls: n,
      invalidOutputRate: n === 0 ? 0 : round4(invalid / n),
      repairRate: n === 0 ? 0 : round4(repaired / n),
      rejectionRate: n === 0 ? 0 : round4(rejected / n),
      evalScore,
      level
    }
  }
  /** Recomputes the standing, logging and counting a change of level. */
  const update = (
    workflow: string,
    target: string,
    policy: QualityPolicy,
    segment: string | undefined
  ): Effect.Effect<void> => {
    const snapshot = compute(workflow, target, policy, segment)
    const s = seriesOf(keyOf(workflow, target))
    if (snapshot.level === s.level) return Effect.void
    const from = s.level
    s.level = snapshot.level
    return Effect.zipRight(
      Metric.increment(
        Metric.tagged(
          Metric.tagged(Metric.tagged(metrics.standing, "workflow", workflow), "target", target),
          "level",
          snapshot.level
        )
      ),
      Effect.annotateLogs(Effect.logWarning(`modelgate: quality standing ${from} → ${snapshot.level}`), {
        workflow,
        target,
        calls: snapshot.calls,
        invalidOutputRate: snapshot.invalidOutputRate,
        rejectionRate: snapshot.rejectionRate
      })
    )
  }
  const remember = (callId: string, entry: Remembered) => {
    calls.delete(callId)
    calls.set(callId, entry)
    if (calls.size > maxRememberedCalls) {
      const oldest = calls.keys().next()
      if (oldest.done !== true) calls.delete(oldest.value)
    }
  }
  return QualitySignals.of({
    record: (record, policy, segment) =>
      Effect.suspend(() => {
        const e = record.evidence
        const at = clock.unsafeCurrentTimeMillis()
        // Per target that answered: invalid if any of its answers failed validation, repaired if it
        // then answered the call.
        const seen = new Map<string, Sample>()
        for (const a of e.attempts) {
          if (a.outcome !== "success" && a.outcome !== "invalid_output") continue
          let sample = seen.get(a.target)
          if (sample === undefined) {
            sample = { at, invalid: false, repaired: false, rejected: false, live: true }
            seen.set(a.target, sample)
          }
          if (a.outcome === "invalid_output") sample.invalid = true
        }
        const effects: Array<Effect.Effect<void>> = []
        for (const [target, sample] of seen) {
          if (sample.invalid && e.target === target && record.outcome === "success") sample.repaired = true
          const key = keyOf(e.workflow, target)
          push(seriesOf(key), sample)
          if (e.target === target) remember(e.callId, { workflow: e.workflow, target, sample, policy, segment })
          effects.push(update(e.workflow, target, policy, segment))
        }
        return effects.length === 0 ? Effect.void : Effect.all(effects, { discard: true })
      }),
    feedback: (callId, feedback) =>
      Effect.suspend(() => {
        const found = calls.get(callId)
        if (found === undefined) return Effect.succeed(false)
        const sample = found.sample
        const rejected = !feedback.accepted
        if (sample.live && sample.rejected !== rejected) {
          const s = seriesOf(keyOf(found.workflow, found.target))
          s.rejected += rejected ? 1 : -1
        }
        sample.rejected = rejected
        return Effect.as(update(found.workflow, found.target, found.policy, found.segment), true)
      }),
    loadEvals: (results) =>
      Effect.sync(() => {
        for (const r of results) evals.set(keyOf(r.target, r.segment), r)
      }),
    standing: (workflow, target, policy, segment) => {
      const s = series.get(keyOf(workflow, target))
      // Nothing recorded and no eval loaded: good standing without computing anything.
      if (s === undefined && (policy.minEvalScore === undefined || evals.size === 0)) return undefined
      const snapshot = compute(workflow, target, policy, segment)
      if (snapshot.level === "ok") return undefined
      const { evalScore } = snapshot
      // Exclusion is only ever from the answers' rate; a demotion may be from the eval score.
      const lowEval =
        snapshot.level === "demoted" &&
        evalScore !== undefined &&
        policy.minEvalScore !== undefined &&
        evalScore < policy.minEvalScore
      return {
        level: snapshot.level,
        demotion: policy.demotion,
        detail: lowEval
          ? `eval score ${evalScore} below ${policy.minEvalScore}`
          : `invalid or rejected ${Math.max(snapshot.invalidOutputRate, snapshot.rejectionRate)} over ${snapshot.calls} calls`
      }
    },
    snapshot: compute
  })
})

/**
 * The signals as a layer (one set per gateway built in its context).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layer: Layer.Layer<QualitySignals> = Layer.effect(QualitySignals, make)
