/**
 * The engine's affordability arithmetic (admission, the router's eligibility, the attempt walk):
 * input tokens at a target, the smallest useful output cap, and the output tokens what is left of
 * a reservation still pays for. Built on `Pricing.costUnitsAt`, in whole store units.
 */
import type { ModelTarget } from "../ModelTarget.js"
import { costUnitsAt } from "../Pricing.js"
import { unitsOfTokens, unitsPerCurrency, unitsPerMillion } from "./costUnits.js"

/**
 * Smallest output cap worth starting an attempt with: a target that cannot be paid for this many
 * output tokens after its input is excluded (`BUDGET_DOES_NOT_FIT`), and an attempt whose
 * remaining reservation pays for fewer does not start.
 */
export const minimumUsefulOutputTokens = 16

/**
 * Input tokens at `target`: the estimate scaled by its tokenizer safety factor.
 */
export const inputTokensAt = (estimatedInputTokens: number, target: ModelTarget): number =>
  Math.ceil(estimatedInputTokens * target.tokenizerSafetyFactor)

/**
 * Output tokens that `amountLeft` still pays for at `target` after `inputTokens` of input;
 * `Infinity` when output is free, 0 when the input alone does not fit. Computed in whole store
 * units: `amountLeft` is a sum of amounts that are whole units (reservations and costs), so it is
 * read back exactly, and an amount equal to the input cost fits it.
 */
export const affordableOutput = (amountLeft: number, inputTokens: number, target: ModelTarget): number => {
  const left = Math.round(amountLeft * unitsPerCurrency) - costUnitsAt(target, inputTokens, 0)
  if (left < 0) return 0
  const perMillion = unitsPerMillion(target.pricing.outputPerMillion)
  if (perMillion === 0) return Infinity
  // The float quotient is within a token of the answer; the integer checks make it exact.
  let n = Math.max(0, Math.floor((left / perMillion) * 1_000_000))
  while (n > 0 && unitsOfTokens(n, perMillion) > left) n--
  while (unitsOfTokens(n + 1, perMillion) <= left) n++
  return n
}
