/**
 * Playback of a computed run: sixty "teaching seconds" in eight stages of 7.5 s. Stage `k` is reached
 * at `k × 7.5 s` and reveals the events assigned to it; the final result is disclosed at 60 s. Pure
 * functions of the teaching time, shared by the page and its tests.
 */
import type { LabEvent, ScenarioModel } from "./scenario.js"
import { stageSeconds, stages, teachingSeconds } from "./scenario.js"

/** Playback speeds the page offers (teaching seconds per real second). */
export const speeds = [0.25, 0.5, 1, 2] as const
/** @see speeds */
export type Speed = (typeof speeds)[number]

/** Labels of the speeds. */
export const speedLabels: Record<Speed, string> = { 0.25: "¼×", 0.5: "½×", 1: "1×", 2: "2×" }

/** `t` clamped to [0, 60]. */
export const clampTime = (t: number): number => Math.min(teachingSeconds, Math.max(0, t))

/** The stage reached at teaching time `t` (0 before the first boundary, 8 at sixty seconds). */
export const stageAt = (t: number): number => Math.min(stages, Math.floor(clampTime(t) / stageSeconds + 1e-9))

/** The next 7.5 s boundary strictly after `t` (60 at most). */
export const nextBoundary = (t: number): number => Math.min(teachingSeconds, (stageAt(t) + 1) * stageSeconds)

/** The events revealed at teaching time `t`: the prefix inspected so far. */
export const revealedAt = (model: ScenarioModel, t: number): ReadonlyArray<LabEvent> => {
  const stage = stageAt(t)
  return model.events.filter((e) => e.stage <= stage)
}

/** Whether the final result may be shown at teaching time `t`. */
export const resultDisclosed = (t: number): boolean => clampTime(t) >= teachingSeconds

/** The virtual instant playback has reached: the last revealed event's (0 before any). */
export const virtualNow = (model: ScenarioModel, t: number): number => {
  const shown = revealedAt(model, t)
  return shown.length === 0 ? 0 : (shown[shown.length - 1]?.at ?? 0)
}

/** What "Export events JSON" writes: the full model and the prefix inspected so far. */
export const exportDocument = (model: ScenarioModel, t: number) => ({
  kind: "modelgate.fallback-lab.events",
  version: 1,
  teachingSeconds: clampTime(t),
  stage: stageAt(t),
  model,
  inspected: revealedAt(model, t)
})
