/**
 * What one provider attempt knows of its call, shared by the pipeline and the stream driver. The
 * driver reads the attempt, never the call's state; it reports progress (first token, delivered
 * output) back through `progress`, which the pipeline reads when the attempt ends or is cut.
 */
import type { Clock, Effect, Option } from "effect"
import type { ProviderError } from "../ProviderAdapter.js"
import type { ModelTarget } from "../ModelTarget.js"
import type { ProviderAdapter, ProviderRequest, ProviderResponse } from "../ProviderAdapter.js"
import type { RouteDecision } from "../RouteDecision.js"

/** Progress of a running attempt, written by whoever drives the provider. */
export interface AttemptProgress {
  /** Time to first token, once a first delta arrived (streams). */
  ttftMs: number | undefined
  /** Output tokens delivered to the consumer so far (streams). */
  outputTokens: number
  /** The first delta was delivered: the call is past its commit point. */
  committed: boolean
}

/** One attempt of a call. */
export interface AttemptContext {
  readonly target: ModelTarget
  /** Epoch-ms instant the attempt was dispatched. */
  readonly startedAt: number
  /** 1 for the first attempt on this target. */
  readonly attempt: number
  /** The target's index in the route (0: the first target). */
  readonly position: number
  /** Not the first target of the route. */
  readonly fallback: boolean
  readonly decision: RouteDecision
  /**
   * Input tokens at this target (after its safety factor): the router's count, or counted on first
   * use when no limit needed one (billing a cut attempt, a stream without usage) — once per call,
   * in slices that give the event loop turns.
   */
  readonly inputTokens: Effect.Effect<number>
  /** Epoch-ms instant the attempt must end by: the earliest of its own limit and the call's deadline. */
  readonly until: number
  /** The call's clock (read once when the call started). */
  readonly clock: Clock.Clock
  readonly progress: AttemptProgress
}

/**
 * How an attempt calls its adapter: `None` when the attempt's time (`attempt.until`) ran out
 * before an answer. `generate` bounds the adapter call; `stream` drives the adapter's stream under
 * its time-to-first-token, gap and total limits and delivers deltas as they arrive.
 */
export type Invoke = (
  adapter: ProviderAdapter,
  request: ProviderRequest,
  attempt: AttemptContext
) => Effect.Effect<Option.Option<ProviderResponse>, ProviderError>
