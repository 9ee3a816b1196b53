/**
 * The disposition table, exhaustively: every failure tag (and the variants the table tells apart)
 * × every combination of attempt facts, against DESIGN §5 written out independently below; and
 * every adapter classification mapped onto the failure union.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration } from "effect"
import * as Disposition from "../src/Disposition.js"
import type { Failure } from "../src/Errors.js"
import { ProviderError } from "../src/Errors.js"
import type { AttemptOutcome } from "../src/ModelResult.js"
import { TenantId } from "../src/ModelCommand.js"
import { TargetRef } from "../src/ModelTarget.js"

const target = TargetRef.make("model://test/a@eu")

type Samples = { readonly [K in Failure["_tag"]]: ReadonlyArray<Extract<Failure, { readonly _tag: K }>> }

/** One or more samples per tag: a new tag in the union does not compile here until it has one. */
const samples: Samples = {
  Refusal: [
    { _tag: "Refusal", target, source: "model" },
    { _tag: "Refusal", target, source: "safety_filter" }
  ],
  RateLimited: [
    { _tag: "RateLimited", target, retryAfter: Duration.seconds(2) },
    { _tag: "RateLimited", target, retryAfter: undefined }
  ],
  ProviderUnavailable: [
    { _tag: "ProviderUnavailable", target, reason: "server_error", httpStatus: 500 },
    { _tag: "ProviderUnavailable", target, reason: "overloaded", httpStatus: 529 },
    { _tag: "ProviderUnavailable", target, reason: "transport" },
    { _tag: "ProviderUnavailable", target, reason: "timeout" },
    { _tag: "ProviderUnavailable", target, reason: "stream_stalled" },
    { _tag: "ProviderUnavailable", target, reason: "stream_truncated" },
    { _tag: "ProviderUnavailable", target, reason: "adapter_defect" }
  ],
  InvalidOutput: [{ _tag: "InvalidOutput", target, issues: ["not valid JSON"] }],
  InvalidRequest: [
    { _tag: "InvalidRequest", reason: "bad_request", target, detail: "400" },
    { _tag: "InvalidRequest", reason: "context_length", target, detail: "too long" },
    { _tag: "InvalidRequest", reason: "input_too_large", detail: "limit" }
  ],
  ProviderRejected: [
    { _tag: "ProviderRejected", target, reason: "authentication", httpStatus: 401 },
    { _tag: "ProviderRejected", target, reason: "quota_exhausted", httpStatus: 429 },
    { _tag: "ProviderRejected", target, reason: "model_not_found", httpStatus: 404 }
  ],
  PolicyViolation: [{ _tag: "PolicyViolation", reason: "DATA_REGION_MISMATCH", excluded: [] }],
  AmbiguousOutcome: [{ _tag: "AmbiguousOutcome", target, cause: "timeout" }],
  BudgetExceeded: [
    { _tag: "BudgetExceeded", tenant: TenantId.make("t"), limit: 1, committed: 0, reserved: 1, requested: 2 }
  ],
  DeadlineExceeded: [{ _tag: "DeadlineExceeded", stage: "attempt", timeoutMs: 1000, elapsedMs: 1000 }],
  NoEligibleRoute: [{ _tag: "NoEligibleRoute", workflow: "w", excluded: [] }],
  StoreError: [{ _tag: "StoreError", store: "budget", operation: "reserve", detail: "" }],
  RunExhausted: [
    { _tag: "RunExhausted", runId: "run-1", reason: "deadline", steps: [] },
    { _tag: "RunExhausted", runId: "run-1", reason: "budget", steps: [] }
  ]
}

const bools = [false, true] as const
const allFacts: Array<Disposition.AttemptFacts> = []
for (const possiblyProcessed of bools)
  for (const sideEffectingTools of bools)
    for (const committed of bools)
      for (const repairAvailable of bools)
        for (const cutByDeadline of bools)
          allFacts.push({ possiblyProcessed, sideEffectingTools, committed, repairAvailable, cutByDeadline })

/** DESIGN §5, written out as an oracle independent of the implementation. */
const oracle = (
  f: Failure,
  facts: Disposition.AttemptFacts
): { next: string; stopWith?: string; outcome: AttemptOutcome; breaker: boolean; availability: boolean } => {
  const temporary = f._tag === "RateLimited" || f._tag === "ProviderUnavailable"
  const availability = temporary || f._tag === "ProviderRejected"
  const breaker =
    f._tag === "RateLimited" || (f._tag === "ProviderUnavailable" && !(f.reason === "timeout" && facts.cutByDeadline))
  const outcome: AttemptOutcome =
    f._tag === "Refusal"
      ? "refusal"
      : f._tag === "RateLimited"
        ? "rate_limited"
        : f._tag === "ProviderUnavailable"
          ? f.reason === "timeout"
            ? "timeout"
            : "unavailable"
          : f._tag === "InvalidOutput"
            ? "invalid_output"
            : f._tag === "InvalidRequest"
              ? "invalid_request"
              : f._tag === "ProviderRejected"
                ? "rejected"
                : f._tag === "AmbiguousOutcome"
                  ? "timeout"
                  : "unavailable"
  const base = { outcome, breaker, availability }
  // After a stream's commit point, nothing but stopping with the failure itself.
  if (facts.committed) return { ...base, next: "Stop", stopWith: f._tag }
  if (temporary) {
    if (facts.possiblyProcessed && facts.sideEffectingTools) {
      return { ...base, next: "Stop", stopWith: "AmbiguousOutcome" }
    }
    return { ...base, next: "Retry" }
  }
  if (f._tag === "InvalidOutput") return { ...base, next: facts.repairAvailable ? "Repair" : "NextTarget" }
  if (f._tag === "InvalidRequest" && f.reason === "context_length") return { ...base, next: "NextLargerTarget" }
  if (f._tag === "ProviderRejected") return { ...base, next: "NextTarget" }
  return { ...base, next: "Stop", stopWith: f._tag }
}

describe("Disposition table", () => {
  const all: Array<Failure> = Object.values(samples).flat()

  it("covers every failure tag × every combination of attempt facts as DESIGN §5 says", () => {
    let rows = 0
    for (const failure of all) {
      for (const facts of allFacts) {
        const row = Disposition.rowOf(failure, facts)
        const want = oracle(failure, facts)
        const got = {
          next: row.next._tag,
          ...(row.next._tag === "Stop" ? { stopWith: row.next.failure._tag } : {}),
          outcome: row.outcome,
          breaker: row.breaker,
          availability: row.availability
        }
        assert.deepStrictEqual(got, want, `${JSON.stringify(failure)} with ${JSON.stringify(facts)}`)
        assert.strictEqual(Disposition.decide(failure, facts)._tag, want.next)
        rows++
      }
    }
    assert.strictEqual(rows, all.length * 32)
  })

  it("an ambiguous stop names the target and the cause", () => {
    const next = Disposition.decide(
      { _tag: "ProviderUnavailable", target, reason: "transport" },
      {
        possiblyProcessed: true,
        sideEffectingTools: true,
        committed: false,
        repairAvailable: false,
        cutByDeadline: false
      }
    )
    assert.deepStrictEqual(next, { _tag: "Stop", failure: { _tag: "AmbiguousOutcome", target, cause: "transport" } })
  })

  it("isAvailability and retryAfterOf read the same rows", () => {
    for (const failure of all) {
      assert.strictEqual(Disposition.isAvailability(failure), oracle(failure, allFacts[0]!).availability)
    }
    assert.deepStrictEqual(Disposition.retryAfterOf(samples.RateLimited[0]!), Duration.seconds(2))
    assert.isUndefined(Disposition.retryAfterOf(samples.Refusal[0]!))
  })
})

describe("Disposition.failureOf: adapter classifications onto the failure union", () => {
  const expected: { readonly [K in ProviderError["kind"]]: string } = {
    refusal: "Refusal",
    rate_limited: "RateLimited",
    server_error: "ProviderUnavailable/server_error",
    overloaded: "ProviderUnavailable/overloaded",
    transport: "ProviderUnavailable/transport",
    timeout: "ProviderUnavailable/timeout",
    stream_stalled: "ProviderUnavailable/stream_stalled",
    stream_truncated: "ProviderUnavailable/stream_truncated",
    invalid_request: "InvalidRequest/bad_request",
    context_length: "InvalidRequest/context_length",
    authentication: "ProviderRejected/authentication",
    permission: "ProviderRejected/permission",
    quota_exhausted: "ProviderRejected/quota_exhausted",
    spend_cap: "ProviderRejected/spend_cap",
    model_not_found: "ProviderRejected/model_not_found",
    request_too_large: "ProviderRejected/request_too_large",
    rejected: "ProviderRejected/other",
    invalid_output: "InvalidOutput"
  }
  const kinds = ProviderError.fields.kind.literals
  it("the expected table lists every kind", () => {
    assert.deepStrictEqual([...kinds].sort(), Object.keys(expected).sort())
  })
  for (const kind of kinds) {
    const want = expected[kind]
    it(`${kind} → ${want}`, () => {
      const pe = new ProviderError({
        kind,
        processed: "no",
        httpStatus: 500,
        retryAfter: Duration.millis(250)
      })
      const f = Disposition.failureOf(target, pe)
      const reason = "reason" in f ? `/${f.reason}` : ""
      assert.strictEqual(`${f._tag}${reason}`, want)
      if (f._tag === "RateLimited" || f._tag === "ProviderUnavailable") {
        assert.deepStrictEqual(f.retryAfter, Duration.millis(250))
      }
    })
  }
})
