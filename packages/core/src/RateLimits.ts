/**
 * Provider rate limits enforced before dispatch: requests per minute and tokens per minute per
 * target, or per provider key shared by several targets (`ModelTarget.rateLimit`). The counts live
 * in a `RateLimitStore` (module `RateLimitStore`): this process's memory by default, Redis
 * (`@modelgate/adapters/redis`) to share one provider key's limits across gateway processes.
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
 * @since 0.2.0
 */
import { Schema } from "effect"

/**
 * A target's provider rate limit. `key` names the provider key (account) whose limits several
 * targets share; by default each target counts on its own (its ref).
 *
 * @since 0.2.0
 * @category Models
 */
export const RateLimit = Schema.Struct({
  key: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  requestsPerMinute: Schema.optional(Schema.Int.pipe(Schema.positive())),
  tokensPerMinute: Schema.optional(Schema.Int.pipe(Schema.positive()))
})
/** @since 0.2.0 */
export type RateLimit = typeof RateLimit.Type
