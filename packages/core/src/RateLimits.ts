/**
 * Provider rate limits enforced before dispatch: requests per minute and tokens per minute per
 * target, or per provider key shared by several targets (`ModelTarget.rateLimit`). The counts live
 * in a `RateLimitStore`: this process's memory by default, Redis (`@modelgate/adapters/redis`) to
 * share one provider key's limits across gateway processes.
 *
 * Details
 *
 * - Windows are fixed UTC minutes (by the caller's `Clock`). An attempt takes one request and its
 *   worst-case tokens (input estimate + output cap) before it is sent; once it ended, the tokens
 *   are corrected to its actual usage (an attempt without usage keeps its estimate).
 * - A target without headroom is **skipped** for this call, like a breaker that is open: the
 *   attempt goes to the next target of the route, and the target is listed in the evidence's
 *   exclusions with `RATE_LIMITED_LOCAL` (detail: when its window resets). Waiting for the next
 *   window (up to a minute) would spend the call's deadline on one target while a fallback may
 *   answer now; a route with no target left fails with `NoEligibleRoute` naming them.
 * - A store that cannot answer fails the call closed with `StoreError` (`store: "ratelimit"`),
 *   before anything is sent.
 *
 * Why not `@effect/experimental`'s `RateLimiter` (0.61, with a Redis store): its `consume` cannot
 * give tokens back, and tokens per minute must be reserved on an estimate and corrected to the
 * actual usage after the answer; its Redis store opens a client of its own, outside this package's
 * command timeouts, `StoreError` mapping, health metrics and shared connection; and the package is
 * a 0.x dependency this project dropped in 0.2.0. The window logic here is one Lua script.
 *
 * @since 0.5.0
 */
import { Context, Effect, Layer } from "effect"
import type { StoreError } from "./Errors.js"

/** The rate limit of a target, defined with `ModelTarget`. @since 0.2.0 */
export { RateLimit } from "./ModelTarget.js"

/**
 * @since 0.5.0
 * @category Models
 */
export interface TakeRequest {
  readonly key: string
  /** Worst-case tokens of the attempt. */
  readonly tokens: number
  readonly requestsPerMinute: number | undefined
  readonly tokensPerMinute: number | undefined
  /** Epoch ms (the caller's clock): picks the window. */
  readonly now: number
}

/**
 * `Taken` (with the window it counted in, to correct its tokens later) or `Limited` (with when the
 * window resets).
 *
 * @since 0.5.0
 * @category Models
 */
export type Admission =
  | { readonly _tag: "Taken"; readonly window: number }
  | { readonly _tag: "Limited"; readonly resetsAt: number }

/**
 * The operations of a rate limit store.
 *
 * @since 0.5.0
 * @category Models
 */
export interface Service {
  /** Counts one request and `tokens` in the current window if both fit, else counts nothing. */
  readonly take: (request: TakeRequest) => Effect.Effect<Admission, StoreError>
  /**
   * Adds `tokens` (negative gives back) to `window` of `key`: the correction of an estimate.
   * Best effort, without waiting (a lost correction errs on the safe side when it gives back).
   */
  readonly adjust: (key: string, window: number, tokens: number) => void
}

/**
 * @since 0.5.0
 * @category Context
 */
export class RateLimitStore extends Context.Tag("@modelgate/core/RateLimitStore")<RateLimitStore, Service>() {}

/** Window length: one UTC minute. @since 0.5.0 */
export const windowMillis = 60_000

/**
 * The memory store: counts of this process only (one window per key, the older one forgotten).
 *
 * @since 0.5.0
 * @category Constructors
 */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => {
  const counts = new Map<string, { window: number; requests: number; tokens: number }>()
  return RateLimitStore.of({
    take: (r) =>
      Effect.sync((): Admission => {
        const window = Math.floor(r.now / windowMillis)
        let c = counts.get(r.key)
        if (c === undefined || c.window !== window) {
          c = { window, requests: 0, tokens: 0 }
          counts.set(r.key, c)
        }
        if (
          (r.requestsPerMinute !== undefined && c.requests + 1 > r.requestsPerMinute) ||
          (r.tokensPerMinute !== undefined && c.tokens + r.tokens > r.tokensPerMinute)
        ) {
          return { _tag: "Limited", resetsAt: (window + 1) * windowMillis }
        }
        c.requests++
        c.tokens += r.tokens
        return { _tag: "Taken", window }
      }),
    adjust: (key, window, tokens) => {
      const c = counts.get(key)
      if (c !== undefined && c.window === window) c.tokens = Math.max(0, c.tokens + tokens)
    }
  })
})

/**
 * @since 0.5.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<RateLimitStore> = Layer.effect(RateLimitStore, makeMemory)
