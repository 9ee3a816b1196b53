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

/** A provider counter as a non-negative integer (missing or invalid counts as 0). @internal */
export const count = (value: number | null | undefined): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0
    ? Math.min(Math.floor(value), Number.MAX_SAFE_INTEGER)
    : 0

/** @internal */
export const makeUsage = (input: {
  readonly inputTokens: number | null | undefined
  readonly cachedInputTokens?: number | null | undefined
  readonly outputTokens: number | null | undefined
  readonly reasoningTokens?: number | null | undefined
}): Usage =>
  new Usage(
    {
      inputTokens: count(input.inputTokens),
      cachedInputTokens: count(input.cachedInputTokens),
      outputTokens: count(input.outputTokens),
      reasoningTokens: count(input.reasoningTokens)
    },
    { disableValidation: true }
  )
