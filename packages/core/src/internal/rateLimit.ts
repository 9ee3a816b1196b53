/**
 * The pipeline's use of `RateLimits`: take a target's request and worst-case tokens before an
 * attempt, correct the tokens to the attempt's usage once it ended.
 */
import { Effect } from "effect"
import type { StoreError } from "../Errors.js"
import type { Usage } from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import type * as RateLimits from "../RateLimits.js"
import type * as RateLimitStore from "../RateLimitStore.js"
import { ExcludedTarget } from "../RouteDecision.js"

/** What an attempt took of its target's rate limit. */
export interface Held {
  readonly store: RateLimitStore.Service
  readonly key: string
  readonly window: number
  readonly tokens: number
}

/**
 * Takes one request and `tokens` of `target`'s limit: what was taken, or the exclusion of a target
 * without headroom (`RATE_LIMITED_LOCAL`, with the instant its window resets).
 */
export const take = (
  store: RateLimitStore.Service,
  target: ModelTarget,
  limit: RateLimits.RateLimit,
  tokens: number,
  now: number,
  deadline?: number
): Effect.Effect<Held | ExcludedTarget, StoreError> => {
  const key = limit.key ?? target.ref
  return Effect.map(
    store.take({
      key,
      tokens,
      requestsPerMinute: limit.requestsPerMinute,
      tokensPerMinute: limit.tokensPerMinute,
      now,
      deadline
    }),
    (admission): Held | ExcludedTarget =>
      admission._tag === "Taken"
        ? { store, key, window: admission.window, tokens }
        : new ExcludedTarget(
            {
              target: target.ref,
              reason: "RATE_LIMITED_LOCAL",
              detail: `provider rate limit reached; window resets at ${new Date(admission.resetsAt).toISOString()}`
            },
            { disableValidation: true }
          )
  )
}

/**
 * Corrects what `held` took to the attempt's usage (`undefined`: nothing was sent, or nothing was
 * reported — then `sent` says whether the estimate stands).
 */
export const settle = (held: Held, usage: Usage | undefined, sent: boolean): void => {
  const actual = usage !== undefined ? usage.inputTokens + usage.outputTokens : sent ? held.tokens : 0
  if (actual !== held.tokens) held.store.adjust(held.key, held.window, actual - held.tokens)
}
