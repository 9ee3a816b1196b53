/**
 * Cost arithmetic, in one place: what usage costs at a target, the worst case of an attempt, and
 * how many output tokens what is left of a reservation still pays for. Pure functions over data
 * (targets, usage); the router, the pipeline and the budgets read them.
 *
 * @since 0.2.0
 */
import type { ModelTarget } from "./ModelTarget.js"

/**
 * Smallest output cap worth starting an attempt with: a target that cannot be paid for this many
 * output tokens after its input is excluded (`BUDGET_DOES_NOT_FIT`), and an attempt whose
 * remaining reservation pays for fewer does not start.
 *
 * @since 0.2.0
 * @category Constants
 */
export const minimumUsefulOutputTokens = 16

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
}

/**
 * Cost in currency units of `usage` at `target`'s prices (cached input at the cached price when
 * the target has one).
 *
 * @since 0.2.0
 * @category Pricing
 */
export const costOf = (target: ModelTarget, usage: Tokens): number => {
  const p = target.pricing
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens)
  return (
    ((usage.inputTokens - cached) * p.inputPerMillion +
      cached * (p.cachedInputPerMillion ?? p.inputPerMillion) +
      usage.outputTokens * p.outputPerMillion) /
    1_000_000
  )
}

/**
 * Input tokens at `target`: the estimate scaled by its tokenizer safety factor.
 *
 * @since 0.2.0
 * @category Pricing
 */
export const inputTokensAt = (estimatedInputTokens: number, target: ModelTarget): number =>
  Math.ceil(estimatedInputTokens * target.tokenizerSafetyFactor)

/**
 * Output cap an attempt at `target` asks for before budget shrinking: the command's cap (else the
 * workflow's, else the target's), never above the workflow's or the target's.
 *
 * @since 0.2.0
 * @category Pricing
 */
export const outputCapAt = (
  commandMax: number | undefined,
  workflowMax: number | undefined,
  target: ModelTarget
): number => {
  const targetMax = target.capabilities.maxOutputTokens
  return Math.min(commandMax ?? workflowMax ?? targetMax, workflowMax ?? Infinity, targetMax)
}

/**
 * Cost of `inputTokens` in and `outputTokens` out at `target`.
 *
 * @since 0.2.0
 * @category Pricing
 */
export const costAt = (target: ModelTarget, inputTokens: number, outputTokens: number): number =>
  (inputTokens * target.pricing.inputPerMillion + outputTokens * target.pricing.outputPerMillion) / 1_000_000

/**
 * Output tokens that `amountLeft` still pays for at `target` after `inputTokens` of input;
 * `Infinity` when output is free, 0 when the input alone does not fit.
 *
 * @since 0.2.0
 * @category Pricing
 */
export const affordableOutput = (amountLeft: number, inputTokens: number, target: ModelTarget): number => {
  const left = amountLeft - (inputTokens * target.pricing.inputPerMillion) / 1_000_000
  if (left < 0) return 0
  if (target.pricing.outputPerMillion === 0) return Infinity
  // A tiny epsilon keeps float error from costing a token.
  return Math.floor((left * 1_000_000) / target.pricing.outputPerMillion + 1e-9)
}

/**
 * The target's list price: input plus output price per million tokens (what scored selection
 * compares when the input was not counted).
 *
 * @since 0.2.0
 * @category Pricing
 */
export const listPrice = (target: ModelTarget): number =>
  target.pricing.inputPerMillion + target.pricing.outputPerMillion
