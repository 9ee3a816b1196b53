/**
 * The persistence seam of provider rate limits (`RateLimits`): counts of requests and tokens per
 * key and UTC minute. The memory store lives here (this process only); a shared store (Redis,
 * `@modelgate/adapters/redis`) lets several gateway processes count one provider key together.
 *
 * Details
 *
 * - `take` is atomic: it counts one request and the attempt's worst-case tokens only if both fit
 *   the key's limits in the current window; `adjust` corrects the tokens afterwards.
 * - `take` fails with `StoreError` (`store: "ratelimit"`) when the store cannot answer: the engine
 *   fails the call closed, before anything is sent.
 *
 * @since 0.2.0
 */
import { Context, Effect, Layer } from "effect"
import type { StoreError } from "./Errors.js"

/**
 * @since 0.2.0
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
  /**
   * Epoch ms (the caller's clock) after which the caller no longer waits: a store with I/O fails
   * with `StoreError` ("timed out") by then at the latest, and gives back what an answer arriving
   * later counted.
   */
  readonly deadline?: number | undefined
}

/**
 * `Taken` (with the window it counted in, to correct its tokens later) or `Limited` (with when the
 * window resets).
 *
 * @since 0.2.0
 * @category Models
 */
export type Admission =
  | { readonly _tag: "Taken"; readonly window: number }
  | { readonly _tag: "Limited"; readonly resetsAt: number }

/**
 * The operations of a rate limit store.
 *
 * @since 0.2.0
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
 * @since 0.2.0
 * @category Context
 */
export class RateLimitStore extends Context.Tag("@modelgate/core/RateLimitStore")<RateLimitStore, Service>() {}

/** Window length: one UTC minute. @since 0.2.0 */
export const windowMillis = 60_000

/**
 * The memory store: counts of this process only (one window per key, the older one forgotten).
 *
 * @internal
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
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<RateLimitStore> = Layer.effect(RateLimitStore, makeMemory)
