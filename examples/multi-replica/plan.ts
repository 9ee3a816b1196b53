/**
 * The multi-replica proof's figures and the messages between the parent and its gateway processes.
 */

export const processes = 4
export const callsPerProcess = 500
export const tenant = "acme"
/** The tenant's budget (USD, period `total`): the binding constraint of the load phase. */
export const limit = 120
/** Prices (USD per million tokens): a call's worst case is about $0.23, its actual cost $0.05–0.23. */
export const inputPerMillion = 1_000
export const outputPerMillion = 2_000
export const maxOutputTokens = 100
/** Shared permits, and the tenant's most permits in flight across all processes. */
export const permits = 48
export const tenantMax = 32
/** Share of the primary provider's answers that fail (after billing some usage). */
export const failureRate = 0.1
/** Consecutive failures that open a breaker. */
export const breakerFailures = 3
export const commandTimeoutMs = 1_000
/** The chaos phase: calls per process, their deadline, how far apart they start. */
export const chaosCalls = 60
export const chaosDeadlineMs = 1_500
export const chaosSpacingMs = 25
/** A call that ends later than its deadline plus this margin counts as hung. */
export const lateMarginMs = 300
export const prefix = "mr:"
export const P = "model://alpha/primary@eu"
export const F = "model://beta/fallback@eu"
export const B = "model://gamma/down@eu"

export type Phase = "load" | "openBreaker" | "checkBreaker" | "tool" | "chaos" | "recover"

export type ToChild = { readonly phase: Phase } | { readonly phase: "exit" }

export interface FromChild {
  readonly phase: Phase | "ready"
  readonly index: number
  readonly result?: unknown
  readonly error?: string
  readonly counters?: { readonly providerCalls: number; readonly withoutReservation: number }
  readonly checks?: { readonly reserves: number; readonly overLimit: number }
}
