/**
 * What the engine and the router read of the model lifecycle (canary controller, shadow traffic,
 * quality signals), and the compile-time part: which features a workflow uses (read once per call
 * through `CompiledWorkflow.lifecycle`), a policy or prompt canary's candidate variant, and a new
 * model version started as a canary (`onNewVersion: "canary"`).
 */
import type { Effect } from "effect"
import type { ModelCommand } from "../ModelCommand.js"
import type { CallRecord, ModelResult } from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import { Workflow } from "../Workflow.js"
import { CanaryPolicy } from "./workflowPolicies.js"
import type { CompiledWorkflow } from "./compiled.js"

export type { Features } from "./compiled.js"

/** A target's quality standing on a workflow when it is not in good standing. */
export interface Standing {
  readonly level: "demoted" | "excluded"
  /** Subtracted from the quality fit under scored selection. */
  readonly demotion: number
  readonly detail: string
}

/** What the router reads. */
export interface View {
  /** The canary's current share (its controller's), or `undefined` for the configured one. */
  readonly canaryShare: (workflow: string, canary: CanaryPolicy) => number | undefined
  /** The target's quality standing on the workflow (and segment), `undefined` in good standing. */
  readonly quality: (workflow: Workflow, segment: string | undefined, target: ModelTarget) => Standing | undefined
}

/** What the engine calls: the view, and once per settled call of a workflow with `lifecycle`. */
export interface Hooks extends View {
  readonly settled: (
    compiled: CompiledWorkflow,
    record: CallRecord,
    command: ModelCommand,
    result: ModelResult | undefined,
    /** The call's input count (before any safety factor), when the router made one. */
    inputTokens?: number | undefined
  ) => Effect.Effect<void>
}

/** Variant fields of a canary: a candidate policy or prompt, not only a target. */
const hasVariant = (c: CanaryPolicy): boolean =>
  c.policyVersion !== undefined || c.promptVersion !== undefined || c.route !== undefined || c.selection !== undefined

/** `compiled` with its features, and its candidate variant for a policy or prompt canary. */
const withFeatures = (compiled: CompiledWorkflow, targets: ReadonlyMap<string, ModelTarget>): CompiledWorkflow => {
  const w = compiled.workflow
  const rollout = w.canary?.rollout !== undefined
  const shadowTarget = w.shadow === undefined ? undefined : targets.get(w.shadow.target)
  const quality = w.quality !== undefined
  let out = compiled
  if (rollout || shadowTarget !== undefined || quality) {
    out = { ...compiled, lifecycle: { rollout, shadowTarget, quality } }
  }
  const canary = w.canary
  if (canary !== undefined && hasVariant(canary)) {
    const variant = Workflow.make({
      ...w,
      policyVersion: canary.policyVersion ?? w.policyVersion,
      prompt: { id: w.prompt.id, version: canary.promptVersion ?? w.prompt.version },
      route: canary.route ?? w.route,
      selection: canary.selection ?? w.selection
    })
    out = {
      ...out,
      canaryVariant: {
        ...out,
        workflow: variant,
        targets: variant.route.flatMap((ref) => {
          const t = targets.get(ref)
          return t === undefined ? [] : [t]
        }),
        canaryVariant: undefined
      }
    }
  }
  return out
}

/** Every compiled workflow with its lifecycle features (`GatewayConfig.compile`'s last step). */
export const compileLifecycle = (
  compiled: Map<string, CompiledWorkflow>,
  targets: ReadonlyMap<string, ModelTarget>
): Map<string, CompiledWorkflow> => {
  for (const [name, c] of compiled) compiled.set(name, withFeatures(c, targets))
  return compiled
}

/** A new model version running as a canary of the version it replaces. */
export interface VersionPin {
  readonly baseline: ModelTarget
  readonly candidate: ModelTarget
}

/**
 * `onNewVersion: "canary"`: for each opted-in workflow (without a canary of its own) whose route
 * target got another `model` than the running configuration serves, the running version stays the
 * baseline and the new one becomes a canary (`newVersionCanary`). `pins` (workflow and ref → the
 * two versions) carry this over later reloads until the configuration names the old version again
 * or a third one (which then starts a canary of the version serving). Other workflows are unchanged.
 */
export const versionCanaries = (
  previous: ReadonlyMap<string, CompiledWorkflow> | undefined,
  next: ReadonlyMap<string, CompiledWorkflow>,
  pins: Map<string, VersionPin>
): ReadonlyMap<string, CompiledWorkflow> => {
  let out: Map<string, CompiledWorkflow> | undefined
  for (const [name, compiled] of next) {
    const w = compiled.workflow
    if (w.onNewVersion !== "canary" || w.canary !== undefined) continue
    for (const fresh of compiled.targets) {
      const key = `${name}\u0000${fresh.ref}`
      let pin = pins.get(key)
      // The version serving now: the pinned baseline, else what the running configuration routes to.
      const serving = pin?.baseline ?? previous?.get(name)?.targets.find((t) => t.ref === fresh.ref)
      if (serving === undefined || serving.model === fresh.model) {
        pins.delete(key)
        continue
      }
      if (pin === undefined || pin.candidate.model !== fresh.model) pin = { baseline: serving, candidate: fresh }
      pins.set(key, pin)
      const settings = w.newVersionCanary
      const canary = CanaryPolicy.make({
        id: `new-version:${fresh.model}`,
        target: fresh.ref,
        share: settings?.share ?? 0.05,
        stickiness: settings?.stickiness ?? "session",
        rollout: settings?.rollout
      })
      const baseline = pin.baseline
      const pinned: CompiledWorkflow = {
        ...compiled,
        workflow: Workflow.make({ ...w, canary }),
        targets: compiled.targets.map((t) => (t.ref === fresh.ref ? baseline : t)),
        canaryTarget: pin.candidate,
        lifecycle:
          canary.rollout === undefined
            ? compiled.lifecycle
            : {
                rollout: true,
                shadowTarget: compiled.lifecycle?.shadowTarget,
                quality: compiled.lifecycle?.quality ?? false
              }
      }
      out ??= new Map(next)
      out.set(name, pinned)
      break
    }
  }
  return out ?? next
}
