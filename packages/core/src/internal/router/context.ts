/**
 * What one routing decision reads: the workflow (or its canary variant), the command, the route
 * health view, the call's resolved options and input count, and the router's state.
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StoreError } from "../../Errors.js"
import type { RouteHealth } from "../healthRecord.js"
import type { ModelCommand } from "../../ModelCommand.js"
import type * as ModelOptions from "../../ModelOptions.js"
import type { ModelTarget, TargetRef } from "../../ModelTarget.js"
import type * as Tenancy from "../../Tenancy.js"
import type { CompiledWorkflow } from "../compiled.js"
import { type Media, type RequestView, requestView } from "./eligibility.js"
import type { RouterState } from "./state.js"

/**
 * What the router needs from route health: whether a target's breaker keeps it out now, and (for
 * scored selection) the route's health record.
 *
 * @since 0.2.0
 * @category Models
 */
export interface BreakerView {
  readonly isOpen: (target: ModelTarget) => Effect.Effect<boolean, StoreError>
  /** The route's health record (`Health.Service.snapshot`); omitted: every route counts as healthy. */
  readonly snapshot?: (route: string) => Effect.Effect<Option.Option<RouteHealth>, StoreError>
  /**
   * Free share (0..1) of a target's concurrency cap, `undefined` for an uncapped target (the
   * engine reads `Concurrency`); omitted: no target is capped.
   */
  readonly concurrencyHeadroom?: ((target: TargetRef) => number | undefined) | undefined
  /**
   * The seam for quality measured in production (e.g. a demotion after a regression): a value
   * added to a target's quality term on a segment (its quality fit); omitted: none.
   */
  readonly qualityAdjustment?: ((target: ModelTarget, segment: string | undefined) => number | undefined) | undefined
}

/** One decision's inputs, fixed once the input is counted. */
export interface Ctx {
  readonly state: RouterState
  readonly compiled: CompiledWorkflow
  readonly breakers: BreakerView
  readonly command: ModelCommand
  readonly mode: "generate" | "stream"
  readonly options: ModelOptions.ResolvedOptions
  /** The call's id: the stickiness key of a `call` (or keyless `session`) canary. */
  readonly callId: string | undefined
  /** The command carries an image (walked once per decision). */
  readonly media: Media
  /** Estimated input tokens, `undefined` when no limit needed a count. */
  readonly inputTokens: number | undefined
  /** The tenant the host vouched for (`Tenancy`), if any: what opens tenant-dedicated targets. */
  readonly identity: Tenancy.Identity | undefined
  /** The time the call has, ms (`Router.decide`'s `timeLeftMs`): read by every time rule. */
  readonly timeLeftMs: number
  /**
   * The caller's clock reading as routing started (`Router.decide`'s `now`), if given: health
   * records kept in memory are read at it without a fiber step.
   */
  readonly now?: number | undefined
}

/** The request view of the decision's command. */
export const viewOf = (ctx: Ctx): RequestView => requestView(ctx.compiled, ctx.command, ctx.mode, ctx.media)
