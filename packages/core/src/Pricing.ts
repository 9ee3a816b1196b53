/**
 * Cost arithmetic: what usage costs at a target and the worst case of an attempt. Pure functions
 * over data (targets, usage); the router, the pipeline and the budgets read them (with the
 * engine's affordability arithmetic, `internal/affordable.ts`, built on {@link costUnitsAt}).
 *
 * @since 0.2.0
 */
import { unitsOfTokens, unitsPerCurrency, unitsPerMillion } from "./internal/costUnits.js"
import type { ModelTarget } from "./ModelTarget.js"
import { defaultMaxOutputTokens } from "./Workflow.js"

/**
 * Token counts, as plain numbers (a `Usage` satisfies it).
 *
 * @since 0.2.0
 * @category Models
 */
export interface Tokens {
  readonly inputTokens: number
  readonly cachedInputTokens: number
  readonly outputTokens: number
  readonly reasoningTokens: number
  /** Audio input tokens, a subset of `inputTokens` (absent: none reported). */
  readonly audioInputTokens?: number | undefined
}

/**
 * Store units of `inputTokens` in and `outputTokens` out at `target` (each part rounded up to a
 * whole unit): the integer every reservation, charge and affordability check is computed in.
 *
 * @since 0.2.0
 * @category Pricing
 */
export const costUnitsAt = (target: ModelTarget, inputTokens: number, outputTokens: number): number =>
  unitsOfTokens(inputTokens, unitsPerMillion(target.pricing.inputPerMillion)) +
  unitsOfTokens(outputTokens, unitsPerMillion(target.pricing.outputPerMillion))

/** Audio input tokens of `usage`, within its input. */
const audioTokensOf = (usage: Tokens): number => Math.min(usage.audioInputTokens ?? 0, usage.inputTokens)

/** Store units of the audio input tokens of `usage` at `target` (its audio price, else its input price). */
const audioUnits = (target: ModelTarget, usage: Tokens): number => {
  const p = target.pricing
  return unitsOfTokens(audioTokensOf(usage), unitsPerMillion(p.audioInputPerMillion ?? p.inputPerMillion))
}

/**
 * Cost in currency units of `usage` at `target`'s prices (cached input at the cached price when
 * the target has one, audio input at its audio price): a whole number of store units (each part
 * rounded up), as currency. Cached and audio tokens are each a part of the input; the rest is
 * priced as text input.
 *
 * @since 0.2.0
 * @category Pricing
 */
export const costOf = (target: ModelTarget, usage: Tokens): number => {
  const p = target.pricing
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens)
  const audio = Math.min(audioTokensOf(usage), usage.inputTokens - cached)
  const units =
    unitsOfTokens(usage.inputTokens - cached - audio, unitsPerMillion(p.inputPerMillion)) +
    unitsOfTokens(cached, unitsPerMillion(p.cachedInputPerMillion ?? p.inputPerMillion)) +
    (audio === 0 ? 0 : audioUnits(target, { ...usage, audioInputTokens: audio })) +
    unitsOfTokens(usage.outputTokens, unitsPerMillion(p.outputPerMillion))
  return units / unitsPerCurrency
}

/**
 * The part of {@link costOf} paid for audio input tokens, in currency units; `undefined` when
 * `usage` reports none (the evidence's `cost.audioInput`).
 *
 * @internal
 */
export const audioCostOf = (target: ModelTarget, usage: Tokens): number | undefined => {
  if (usage.audioInputTokens === undefined) return undefined
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens)
  const audio = Math.min(audioTokensOf(usage), usage.inputTokens - cached)
  return audioUnits(target, { ...usage, audioInputTokens: audio }) / unitsPerCurrency
}

/**
 * Output cap an attempt at `target` asks for before budget shrinking, and what a reservation pays
 * for: the command's cap (else the workflow's, else `Workflow.defaultMaxOutputTokens`), never above
 * the workflow's or the target's, and, when the input is known (`inputTokens`, at the target:
 * safety factor applied), never above what is left of the target's context window after it
 * (input + output ≤ window; 0 when nothing is left).
 *
 * @since 0.2.0
 * @category Pricing
 */
export const outputCapAt = (
  commandMax: number | undefined,
  workflowMax: number | undefined,
  target: ModelTarget,
  inputTokens?: number
): number => {
  const caps = target.capabilities
  const targetMax = caps.maxOutputTokens
  const cap = Math.min(commandMax ?? workflowMax ?? defaultMaxOutputTokens, workflowMax ?? Infinity, targetMax)
  return inputTokens === undefined ? cap : Math.max(0, Math.min(cap, caps.contextWindow - inputTokens))
}

/**
 * Cost of `inputTokens` in and `outputTokens` out at `target`: {@link costUnitsAt} as currency.
 *
 * @since 0.2.0
 * @category Pricing
 */
export const costAt = (target: ModelTarget, inputTokens: number, outputTokens: number): number =>
  costUnitsAt(target, inputTokens, outputTokens) / unitsPerCurrency

/**
 * The target's list price: input plus output price per million tokens (what scored selection
 * compares when the input was not counted).
 *
 * @internal
 */
export const listPrice = (target: ModelTarget): number =>
  target.pricing.inputPerMillion + target.pricing.outputPerMillion
