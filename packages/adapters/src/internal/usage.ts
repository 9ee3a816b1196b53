/**
 * Construction of core `Usage` from provider counters that may be missing, null or nonsense.
 *
 * Conventions, the same for every adapter: `inputTokens` counts every input token, cached ones
 * included (`cachedInputTokens` is a subset); `outputTokens` counts every generated token,
 * reasoning included (`reasoningTokens` is a subset).
 *
 * @internal
 */
import { Usage } from "@modelgate/core/ModelResult"
import { Schema } from "effect"

/**
 * Largest count accepted for one usage field (10^9 tokens). A provider reporting more is clamped
 * to it, so that usage summed over any realistic number of attempts stays a safe integer (and a
 * record stays encodable).
 *
 * @internal
 */
export const maxTokenCount = 1_000_000_000

/**
 * A usage counter on the wire, as every provider's decoder reads it: absent, `null` or a number
 * ({@link count} makes it an integer).
 *
 * @internal
 */
export const WireCount = Schema.optional(Schema.NullOr(Schema.Number))

/**
 * A provider counter as an integer in `[0, maxTokenCount]`: missing, negative or not a number
 * counts as 0; fractions are floored; larger values (`Infinity` included) are clamped.
 *
 * @internal
 */
export const count = (value: number | null | undefined): number =>
  typeof value === "number" && value > 0 ? (value >= maxTokenCount ? maxTokenCount : Math.floor(value)) : 0

/**
 * The sum of provider counters, each validated by {@link count}, clamped like one.
 *
 * @internal
 */
export const sum = (...values: ReadonlyArray<number | null | undefined>): number => {
  let total = 0
  for (const value of values) total += count(value)
  return Math.min(total, maxTokenCount)
}

/**
 * Core `Usage` from provider counters. Subsets never exceed their totals: `cachedInputTokens` is at
 * most `inputTokens`, `reasoningTokens` at most `outputTokens`.
 *
 * @internal
 */
export const makeUsage = (input: {
  readonly inputTokens: number | null | undefined
  readonly cachedInputTokens?: number | null | undefined
  readonly outputTokens: number | null | undefined
  readonly reasoningTokens?: number | null | undefined
  /** Audio input tokens; `undefined`, `null` or 0 when the provider reported none (then absent). */
  readonly audioInputTokens?: number | null | undefined
}): Usage => {
  const inputTokens = count(input.inputTokens)
  const outputTokens = count(input.outputTokens)
  const audio = count(input.audioInputTokens)
  return new Usage(
    {
      inputTokens,
      cachedInputTokens: Math.min(count(input.cachedInputTokens), inputTokens),
      outputTokens,
      reasoningTokens: Math.min(count(input.reasoningTokens), outputTokens),
      ...(audio === 0 ? {} : { audioInputTokens: Math.min(audio, inputTokens) })
    },
    { disableValidation: true }
  )
}
