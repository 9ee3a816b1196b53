/**
 * The canary controller: moves the share of each canary with a `rollout` from the outcomes of its
 * calls. Per canary it keeps the calls of the current evaluation window, candidate side and
 * baseline side apart (error rate, invalid-output rate, p95 latency, cost per call); at each window
 * boundary it rolls the canary back (share 0) when the candidate is worse than the baseline by more
 * than a threshold after the minimum sample, or ramps the share to the next step after a clean
 * window. Every change is logged, counted in `modelgate.canary.changes` and published on `changes`.
 * The router assigns sides with the controller's current share.
 *
 * Windows are aligned on the instant the canary was first registered; a change is stamped with its
 * window's boundary. The share read at or after a boundary is the judged one. `layer` also
 * evaluates each window at its boundary (a fiber in the layer's scope), so changes are logged,
 * counted and published then; without it (the gateway's own controller) that happens with the
 * canary's next call.
 *
 * @since 0.2.0
 */
import { Clock, Context, Duration, Effect, Layer, Metric, PubSub, Stream } from "effect"
import { breaches, type Sample, sampleOf, statsOf, type WindowStats } from "./internal/canaryWindow.js"
import type { CallRecord } from "./ModelResult.js"
import type { CanaryPolicy, CanaryRollout } from "./internal/workflowPolicies.js"
import { canaryMetrics as metrics } from "./internal/metrics.js"

/** What a canary's calls looked like on one side over one window (`Change.candidate`, `baseline`). */
export type { WindowStats }

/**
 * What a change did: `started` (registered), `ramped` (share raised to the next step),
 * `rolled_back` (share 0), `completed` (the last step passed a clean window).
 *
 * @since 0.2.0
 * @category Models
 */
export type Action = "started" | "ramped" | "rolled_back" | "completed"

/**
 * One change of a canary's share, stamped with the instant it took effect (a window boundary).
 *
 * @since 0.2.0
 * @category Models
 */
export interface Change {
  readonly workflow: string
  readonly canary: string
  readonly action: Action
  readonly from: number
  readonly to: number
  /** Epoch millis of the window boundary (or of the registration, for `started`). */
  readonly at: number
  /** The thresholds the candidate broke (`rolled_back`), e.g. `errorRate 0.4 > 0 + 0.05`. */
  readonly reasons: ReadonlyArray<string>
  readonly candidate?: WindowStats | undefined
  readonly baseline?: WindowStats | undefined
}

/**
 * A canary's state: `running` (evaluated every window), `rolled_back` or `completed` (no longer
 * evaluated; a new canary id starts over).
 *
 * @since 0.2.0
 * @category Models
 */
export interface State {
  readonly workflow: string
  readonly canary: string
  readonly status: "running" | "rolled_back" | "completed"
  readonly share: number
  /** Epoch millis at which the current window closes. */
  readonly windowEndsAt: number
}

/**
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  /**
   * Starts controlling `canary` of `workflow` at its configured share (a `started` change); a
   * canary already registered under the same id keeps its state (a reload does not restart it).
   */
  readonly register: (workflow: string, canary: CanaryPolicy) => Effect.Effect<void>
  /** One settled call of a controlled canary (others are ignored); evaluates elapsed windows first. */
  readonly observe: (record: CallRecord) => Effect.Effect<void>
  /** Evaluates every window that has ended by now. */
  readonly evaluate: Effect.Effect<void>
  /**
   * The current share of a registered canary (`undefined` when not registered). A window that has
   * ended is judged first, so the share changes exactly at the boundary; the change's log line,
   * metric and event follow with the next effect of the controller (at once under `layer`).
   */
  readonly share: (workflow: string, canary: string) => number | undefined
  /** The state of a registered canary. */
  readonly state: (workflow: string, canary: string) => State | undefined
  /** Every change so far, oldest first. */
  readonly history: Effect.Effect<ReadonlyArray<Change>>
  /** Changes from now on. */
  readonly changes: Stream.Stream<Change>
  /** Epoch millis of the earliest window boundary of a running canary (`undefined`: none). */
  readonly nextBoundary: () => number | undefined
}

/**
 * @since 0.2.0
 * @category Context
 */
export class CanaryController extends Context.Tag("@modelgate/core/CanaryController")<CanaryController, Service>() {}

interface Entry {
  readonly workflow: string
  readonly canary: string
  readonly rollout: CanaryRollout
  readonly windowMs: number
  status: State["status"]
  share: number
  windowEndsAt: number
  candidate: Array<Sample>
  baseline: Array<Sample>
}

const keyOf = (workflow: string, canary: string) => `${workflow}\u0000${canary}`

/**
 * A controller reading time from the `Clock` of the context it is made in (a `TestClock` in tests).
 * Windows are evaluated when outcomes arrive or `evaluate` runs; {@link layer} also evaluates each
 * one at its boundary.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make: Effect.Effect<Service> = Effect.gen(function* () {
  const clock = yield* Effect.clock
  const hub = yield* PubSub.unbounded<Change>()
  const entries = new Map<string, Entry>()
  const history: Array<Change> = []
  /** Changes made but not yet logged, counted and published (a synchronous `share` read makes them). */
  const pending: Array<Change> = []
  const emit = (change: Change): Effect.Effect<void> =>
    Metric.increment(
      Metric.tagged(
        Metric.tagged(Metric.tagged(metrics.changes, "workflow", change.workflow), "canary", change.canary),
        "action",
        change.action
      )
    ).pipe(
      Effect.zipRight(
        Effect.annotateLogs(
          change.action === "rolled_back"
            ? Effect.logWarning("modelgate: canary rolled back")
            : Effect.logInfo(`modelgate: canary ${change.action.replace("_", " ")}`),
          {
            workflow: change.workflow,
            canary: change.canary,
            from: change.from,
            to: change.to,
            at: change.at,
            ...(change.reasons.length > 0 ? { reasons: change.reasons.join("; ") } : {})
          }
        )
      ),
      Effect.zipRight(PubSub.publish(hub, change)),
      Effect.asVoid
    )
  /** Records a change now (history, the share) and queues its log line, metric and event. */
  const change = (c: Change) => {
    history.push(c)
    pending.push(c)
  }
  const flush: Effect.Effect<void> = Effect.suspend(() =>
    pending.length === 0 ? Effect.void : Effect.forEach(pending.splice(0), emit, { discard: true })
  )
  /** Closes every window of `entry` that ended by `now`. */
  const close = (entry: Entry, now: number): void => {
    while (entry.status === "running" && entry.windowEndsAt <= now) {
      const at = entry.windowEndsAt
      entry.windowEndsAt += entry.windowMs
      const candidate = statsOf(entry.candidate)
      const baseline = statsOf(entry.baseline)
      entry.candidate = []
      entry.baseline = []
      if (candidate.calls < entry.rollout.minSamples) continue
      const from = entry.share
      const broken = breaches(entry.rollout, candidate, baseline)
      const base = { workflow: entry.workflow, canary: entry.canary, from, at, candidate, baseline }
      if (broken.length > 0) {
        entry.status = "rolled_back"
        entry.share = 0
        change({ ...base, action: "rolled_back", to: 0, reasons: broken })
        continue
      }
      const next = entry.rollout.steps.find((x) => x > from)
      if (next === undefined) {
        entry.status = "completed"
        change({ ...base, action: "completed", to: from, reasons: [] })
      } else {
        entry.share = next
        change({ ...base, action: "ramped", to: next, reasons: [] })
      }
    }
  }
  const closeAll = (now: number): void => {
    for (const entry of entries.values()) close(entry, now)
  }
  return CanaryController.of({
    register: (workflow, canary) =>
      Effect.suspend(() => {
        const rollout = canary.rollout
        const key = keyOf(workflow, canary.id)
        if (rollout === undefined || entries.has(key)) return Effect.void
        const now = clock.unsafeCurrentTimeMillis()
        const windowMs = Math.max(1, Duration.toMillis(rollout.window))
        entries.set(key, {
          workflow,
          canary: canary.id,
          rollout,
          windowMs,
          status: "running",
          share: canary.share,
          windowEndsAt: now + windowMs,
          candidate: [],
          baseline: []
        })
        change({ workflow, canary: canary.id, action: "started", from: 0, to: canary.share, at: now, reasons: [] })
        return flush
      }),
    observe: (record) =>
      Effect.suspend(() => {
        const assignment = record.evidence.canary
        if (assignment === undefined) return Effect.void
        const entry = entries.get(keyOf(record.evidence.workflow, assignment.id))
        if (entry === undefined) return Effect.void
        close(entry, clock.unsafeCurrentTimeMillis())
        const sample = sampleOf(record)
        if (sample !== undefined && entry.status === "running") {
          if (assignment.side === "candidate" && assignment.skipped !== true) entry.candidate.push(sample)
          else entry.baseline.push(sample)
        }
        return flush
      }),
    evaluate: Effect.suspend(() => {
      closeAll(clock.unsafeCurrentTimeMillis())
      return flush
    }),
    share: (workflow, canary) => {
      const entry = entries.get(keyOf(workflow, canary))
      if (entry === undefined) return undefined
      // A window that has ended is judged before its share is read: the boundary is exact.
      close(entry, clock.unsafeCurrentTimeMillis())
      return entry.share
    },
    state: (workflow, canary) => {
      const e = entries.get(keyOf(workflow, canary))
      return e === undefined
        ? undefined
        : { workflow, canary, status: e.status, share: e.share, windowEndsAt: e.windowEndsAt }
    },
    history: Effect.sync(() => history.slice()),
    changes: Stream.fromPubSub(hub),
    nextBoundary: () => {
      let next: number | undefined
      for (const e of entries.values()) {
        if (e.status === "running" && (next === undefined || e.windowEndsAt < next)) next = e.windowEndsAt
      }
      return next
    }
  })
})

/** How long the evaluation fiber waits when no canary is running before it looks again. */
const idlePoll = Duration.seconds(1)

/**
 * The controller as a layer, with a fiber in the layer's scope that evaluates every window at its
 * boundary (so a change happens then, whether or not a call arrives).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layer: Layer.Layer<CanaryController> = Layer.scoped(
  CanaryController,
  Effect.gen(function* () {
    const controller = yield* make
    const tick = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const next = controller.nextBoundary()
      const wait = next === undefined ? idlePoll : Duration.millis(Math.max(0, Math.min(next - now, 1_000)))
      return Effect.zipRight(Effect.sleep(wait), controller.evaluate)
    })
    yield* Effect.forkScoped(Effect.forever(tick))
    return controller
  })
)
