/**
 * The decided route: the value the engine works on (`Route`), whose `RouteDecision` and id are
 * built only when someone reads them, and the step that drops targets from it after the decision
 * (what the tenant's remaining budget cannot pay for).
 */
import type { ModelCommand } from "../../ModelCommand.js"
import type * as ModelOptions from "../../ModelOptions.js"
import type { ModelTarget, TargetRef } from "../../ModelTarget.js"
import { ExcludedTarget, RouteDecision, routeIdOf } from "../../RouteDecision.js"
import type {
  CanaryAssignment,
  Escalation,
  ExclusionReason,
  RouteRequirements,
  SelectionReason,
  TargetScore
} from "../../RouteDecision.js"
import type { CompiledWorkflow } from "../compiled.js"
import { type Media, noMedia, requestView } from "./eligibility.js"
import { escalationWithin } from "./escalation.js"
import { LazyScores } from "./lazyScores.js"
import type { PrefixMemo } from "./prefix.js"

/**
 * A decision with the resolved targets, as the engine uses it.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Route {
  /** The decision as a `RouteDecision` (built on first read). */
  readonly decision: RouteDecision
  /** Eligible target refs, in order (the decision's `eligible`). */
  readonly eligible: ReadonlyArray<TargetRef>
  /** Excluded targets with their reasons (the decision's `excluded`). */
  readonly excluded: ReadonlyArray<ExcludedTarget>
  readonly compiled: CompiledWorkflow
  /** Eligible targets, in order. */
  readonly targets: ReadonlyArray<ModelTarget>
  /**
   * Estimated input tokens before per-target safety factors; `undefined` when no limit needed a
   * count (no finite budget, cost cap or input limit, and the input certainly fits every window).
   */
  readonly inputTokens: number | undefined
  /** The call's sampling and provider options, resolved against the workflow's bounds. */
  readonly options: ModelOptions.ResolvedOptions
  /** Why the first eligible target leads (the decision's `selectionReason`). */
  readonly selectionReason?: SelectionReason
  /** Scored selection: the scores of the targets that passed the hard filters, best first. */
  readonly scores?: ReadonlyArray<TargetScore> | undefined
  /** The workflow's canary and the side the call was assigned (the decision's `canary`). */
  readonly canary?: CanaryAssignment | undefined
  /** The decision's id (`RouteDecision.routeId`), computed when first read. */
  readonly routeId: string
  /** The command's `escalate` signal and where it led (the decision's `escalation`). */
  readonly escalation?: Escalation | undefined
  /** Prompt-prefix affinity: what to remember for the target that answers (`Workflow.prefixAffinity`). */
  readonly prefix?: PrefixMemo | undefined
}

/** What of the request a decision's `required` and `routeId` read. */
export interface Facts {
  /** Absent for a route rebuilt from another `Route` implementation: its decision has no `required`. */
  readonly command: ModelCommand | undefined
  readonly mode: "generate" | "stream"
  /** The command carries an image (counted once per decision). */
  readonly media: Media
  /** A short deadline put the fast latency class first. */
  readonly fastTier: boolean
  /** Prompt-prefix affinity: the prompt's prefix keys, remembered for the target that answers. */
  readonly prefix?: PrefixMemo | undefined
}

/** The requirements a decision applied (the decision's `required`). */
const requiredOf = (
  compiled: CompiledWorkflow,
  facts: Facts,
  inputTokens: number | undefined
): RouteRequirements | undefined => {
  const w = compiled.workflow
  const command = facts.command
  if (command === undefined) return undefined
  const view = requestView(compiled, command, facts.mode, facts.media)
  const out: { -readonly [K in keyof RouteRequirements]: RouteRequirements[K] } = {
    tools: w.requires.tools || view.tools,
    vision: w.requires.vision || view.images,
    streaming: w.requires.streaming || view.streaming,
    structuredOutput: compiled.schema !== undefined,
    regions: view.regions,
    dataClass: view.dataClass,
    risk: view.risk ?? "LOW"
  }
  if (view.minQualityTier !== undefined) out.minQualityTier = view.minQualityTier
  const preferred = command.preferredTier ?? w.preferredTier
  if (preferred !== undefined) out.preferredTier = preferred
  if (facts.fastTier) out.latencyTier = "fast"
  // The window the call needs: its counted input, or the command's minContextTokens when larger.
  const context = Math.max(inputTokens === undefined ? 0 : Math.ceil(inputTokens), view.minContextTokens ?? 0)
  if (context > 0) out.contextTokens = context
  if (view.segment !== undefined) out.segment = view.segment
  return out
}

/** A route whose `RouteDecision` value and id are built only when someone reads them. */
export class Decided implements Route {
  private refs: ReadonlyArray<TargetRef> | undefined
  private built: RouteDecision | undefined
  private id: string | undefined
  constructor(
    readonly compiled: CompiledWorkflow,
    readonly targets: ReadonlyArray<ModelTarget>,
    readonly excluded: ReadonlyArray<ExcludedTarget>,
    readonly inputTokens: number | undefined,
    readonly options: ModelOptions.ResolvedOptions,
    readonly selectionReason: SelectionReason,
    private readonly scoreSource: ReadonlyArray<TargetScore> | LazyScores | undefined,
    readonly facts: Facts,
    readonly canary?: CanaryAssignment | undefined,
    readonly escalation?: Escalation | undefined
  ) {}
  get prefix(): PrefixMemo | undefined {
    return this.facts.prefix
  }
  /** Eligible target refs, in order (made when first read). */
  get eligible(): ReadonlyArray<TargetRef> {
    if (this.refs === undefined) this.refs = this.targets.map((t) => t.ref)
    return this.refs
  }
  /** Scored selection: the scores of the targets that passed the hard filters, best first (made when read). */
  get scores(): ReadonlyArray<TargetScore> | undefined {
    const s = this.scoreSource
    return s instanceof LazyScores ? s.value : s
  }
  /** The same decision with some of its parts replaced. */
  with(changes: {
    readonly targets?: ReadonlyArray<ModelTarget>
    readonly excluded?: ReadonlyArray<ExcludedTarget>
    readonly selectionReason?: SelectionReason
    readonly scores?: ReadonlyArray<TargetScore> | undefined
    readonly canary?: CanaryAssignment | undefined
    readonly escalation?: Escalation | undefined
  }): Decided {
    return new Decided(
      this.compiled,
      changes.targets ?? this.targets,
      changes.excluded ?? this.excluded,
      this.inputTokens,
      this.options,
      changes.selectionReason ?? this.selectionReason,
      "scores" in changes ? changes.scores : this.scoreSource,
      this.facts,
      "canary" in changes ? changes.canary : this.canary,
      "escalation" in changes ? changes.escalation : this.escalation
    )
  }
  get routeId(): string {
    if (this.id === undefined) {
      const w = this.compiled.workflow
      const parts: Array<string> = [w.name, w.policyVersion, this.selectionReason, this.facts.fastTier ? "fast" : ""]
      for (const ref of this.eligible) parts.push(ref)
      for (const e of this.excluded) parts.push(`${e.target}!${e.reason}`)
      const x = this.escalation
      if (x !== undefined) parts.push(`^${x.signal}>${x.to ?? ""}`)
      const c = this.canary
      if (c !== undefined) parts.push(`~${c.id}:${c.side}${c.skipped === true ? ":skipped" : ""}`)
      this.id = routeIdOf(parts)
    }
    return this.id
  }
  get decision(): RouteDecision {
    if (this.built === undefined) {
      const w = this.compiled.workflow
      this.built = new RouteDecision(
        {
          routeId: this.routeId,
          workflow: w.name,
          policyVersion: w.policyVersion,
          required: requiredOf(this.compiled, this.facts, this.inputTokens),
          eligible: this.eligible,
          excluded: this.excluded,
          estimatedInputTokens: this.inputTokens,
          selectionReason: this.selectionReason,
          scores: this.scores,
          canary: this.canary,
          selected: this.eligible[0],
          escalation: this.escalation,
          requestId: this.facts.command?.requestId
        },
        { disableValidation: true }
      )
    }
    return this.built
  }
}

/**
 * `route` without the targets of `drop`, which join its exclusions with their reasons (the engine
 * uses it for `BUDGET_DOES_NOT_FIT` once the tenant's remaining budget is known). Targets are
 * dropped by identity: two model versions of one ref (a new version on canary and the running
 * one) are two targets, and dropping one keeps the other. See {@link replanned} for the rest.
 *
 * @since 0.2.0
 * @category Routing
 */
export const withoutTargets = (
  route: Route,
  drop: ReadonlyArray<{ readonly target: ModelTarget; readonly reason: ExclusionReason; readonly detail: string }>
): Route => {
  if (drop.length === 0) return route
  const targets = route.targets.filter((t) => !drop.some((d) => d.target === t))
  const excluded = [
    ...route.excluded,
    ...drop.map(
      (d) =>
        new ExcludedTarget({ target: d.target.ref, reason: d.reason, detail: d.detail }, { disableValidation: true })
    )
  ]
  return replanned(route, targets, excluded)
}

/**
 * `route` with `targets` (in order) and `excluded` in place of its own, as the budget re-plan
 * decided them: scores of refs no longer routed are left out; when the leader changed the reason
 * becomes `ONLY_ELIGIBLE` (one left), else `ESCALATION` (the command's escalation still leads to a
 * stronger target), `BEST_SCORE` (scored) or `PINNED_ORDER` (ordered). A command's escalation whose
 * target was dropped leads to the new first target when that is still stronger, else it has no `to`.
 */
export const replanned = (
  route: Route,
  targets: ReadonlyArray<ModelTarget>,
  excluded: ReadonlyArray<ExcludedTarget>
): Route => {
  const scores = route.scores?.filter((s) => targets.some((t) => t.ref === s.target))
  const leaderKept = targets[0] !== undefined && targets[0] === route.targets[0]
  // The command's escalation as the remaining targets make it (its target may be among the dropped).
  const escalation =
    route.escalation === undefined
      ? undefined
      : escalationWithin(route.escalation, targets, route.compiled.workflow.escalation)
  const reason: SelectionReason | undefined = leaderKept
    ? route.selectionReason
    : targets.length === 1
      ? "ONLY_ELIGIBLE"
      : escalation?.to !== undefined
        ? "ESCALATION"
        : route.scores !== undefined
          ? "BEST_SCORE"
          : "PINNED_ORDER"
  if (route instanceof Decided) {
    return route.with({
      targets,
      excluded,
      scores,
      escalation,
      ...(reason !== undefined ? { selectionReason: reason } : {})
    })
  }
  return new Decided(
    route.compiled,
    targets,
    excluded,
    route.inputTokens,
    route.options,
    reason ?? "PINNED_ORDER",
    scores,
    { command: undefined, mode: "generate", media: noMedia, fastTier: false },
    route.canary,
    escalation
  )
}
