/**
 * The disposition table, exhaustively: every failure tag (and the variants the table tells apart)
 * × every combination of attempt facts, against DESIGN §5 written out independently below; and
 * every adapter classification mapped onto the failure union; the classification of every way an
 * attempt ends, the retry gate and the end-of-route table, each against an oracle written out here.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option } from "effect"
import * as Disposition from "../src/Disposition.js"
import { type Classified, type RetryProbes, type RouteFacts, retryAfterOf } from "../src/internal/disposition.js"
import type { Failure } from "../src/Errors.js"
import { ProviderError } from "../src/ProviderAdapter.js"
import type { AttemptOutcome } from "../src/ModelResult.js"
import { TenantId } from "../src/ModelCommand.js"
import { TargetRef } from "../src/ModelTarget.js"
import { providerAnswer } from "./fixtures.js"

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
    assert.deepStrictEqual(retryAfterOf(samples.RateLimited[0]!), Duration.seconds(2))
    assert.isUndefined(retryAfterOf(samples.Refusal[0]!))
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

describe("Disposition.isTemporaryKind: the one list of retried kinds, read from the table", () => {
  it("a kind is temporary exactly when it maps onto RateLimited or ProviderUnavailable (DESIGN §5: retried)", () => {
    for (const kind of ProviderError.fields.kind.literals) {
      const f = Disposition.failureOf(target, new ProviderError({ kind, processed: "no" }))
      const want = f._tag === "RateLimited" || f._tag === "ProviderUnavailable"
      assert.strictEqual(Disposition.isTemporaryKind(kind), want, kind)
    }
  })
})

describe("Disposition.classify: every recording path", () => {
  const answer = providerAnswer
  type Want = {
    outcome: AttemptOutcome
    failure: string | undefined
    breaker: boolean
    possiblyProcessed: boolean
    billSent: boolean
  }
  const view = (c: Classified): Want => ({
    outcome: c.outcome,
    failure:
      c.failure === undefined
        ? undefined
        : `${c.failure._tag}${"reason" in c.failure ? `/${c.failure.reason}` : ""}${c.failure._tag === "Refusal" ? `/${c.failure.source}` : ""}`,
    breaker: c.breaker,
    possiblyProcessed: c.possiblyProcessed,
    billSent: c.billSent
  })

  for (const cut of bools) {
    it(`answers, refusals, timeouts and defects (cut by the deadline: ${cut})`, () => {
      assert.deepStrictEqual(view(Disposition.classify(target, Exit.succeed(Option.some(answer())), cut)), {
        outcome: "success",
        failure: undefined,
        breaker: false,
        possiblyProcessed: true,
        billSent: false
      })
      assert.deepStrictEqual(
        view(Disposition.classify(target, Exit.succeed(Option.some(answer({ refusal: true }))), cut)),
        { outcome: "refusal", failure: "Refusal/model", breaker: false, possiblyProcessed: true, billSent: false }
      )
      assert.deepStrictEqual(
        view(
          Disposition.classify(
            target,
            Exit.succeed(Option.some(answer({ refusal: true, finishReason: "content_filter" }))),
            cut
          )
        ),
        {
          outcome: "refusal",
          failure: "Refusal/safety_filter",
          breaker: false,
          possiblyProcessed: true,
          billSent: false
        }
      )
      // Sent and cut by its bound: a timeout; not the target's fault when the call's deadline imposed it.
      assert.deepStrictEqual(view(Disposition.classify(target, Exit.succeed(Option.none()), cut)), {
        outcome: "timeout",
        failure: "ProviderUnavailable/timeout",
        breaker: !cut,
        possiblyProcessed: true,
        billSent: true
      })
      // A defect is a bug of the adapter: it counts against the target whatever the deadline.
      assert.deepStrictEqual(view(Disposition.classify(target, Exit.die(new RangeError("x")), cut)), {
        outcome: "unavailable",
        failure: "ProviderUnavailable/adapter_defect",
        breaker: true,
        possiblyProcessed: true,
        billSent: true
      })
    })
  }

  it("a classified failure: the row of its failure, for every kind × processed × cut", () => {
    for (const kind of ProviderError.fields.kind.literals)
      for (const processed of ["no", "maybe"] as const)
        for (const cut of bools) {
          const pe = new ProviderError({ kind, processed, httpStatus: 500 })
          const failure = Disposition.failureOf(target, pe)
          const row = oracle(failure, { ...allFacts[0]!, possiblyProcessed: processed === "maybe", cutByDeadline: cut })
          const got = Disposition.classify(target, Exit.fail(pe), cut)
          assert.deepStrictEqual(
            [got.outcome, got.failure?._tag, got.breaker, got.possiblyProcessed, got.billSent, got.error],
            [row.outcome, failure._tag, row.breaker, processed === "maybe", false, pe],
            `${kind} ${processed} ${cut}`
          )
        }
  })

  it("cutByDeadline: a bound shorter than the target's own limit, run to the bound", () => {
    assert.isTrue(Disposition.cutByDeadline(300, 1000, 300))
    assert.isFalse(Disposition.cutByDeadline(300, 1000, 299))
    assert.isFalse(Disposition.cutByDeadline(1000, 1000, 1000))
  })
})

describe("Disposition.retryGate: attempt limit, schedule delay against the time left, breaker, retry budget", () => {
  const delays = [Option.none(), Option.some(0), Option.some(100), Option.some(600)] as const
  it("every combination, and a question is asked only when the earlier ones let the retry through", () => {
    let cases = 0
    for (const attempt of [1, 3])
      for (const delay of delays)
        for (const open of bools)
          for (const token of bools) {
            const asked: Array<string> = []
            const probes: RetryProbes = {
              delay: Effect.sync(() => {
                asked.push("delay")
                return delay
              }),
              breakerOpen: Effect.sync(() => {
                asked.push("breaker")
                return open
              }),
              retryToken: Effect.sync(() => {
                asked.push("token")
                return token
              })
            }
            // 1000 ms left at 0, minimum attempt time 500: a wait of 600 leaves too little.
            const verdict = Effect.runSync(
              Disposition.retryGate({ attempt, maxAttempts: 3, now: 0, deadline: 1000, minimumMs: 500 }, probes)
            )
            // The oracle, written out.
            const want: { verdict: string; asked: Array<string> } =
              attempt >= 3
                ? { verdict: "NoRetry/attempts", asked: [] }
                : Option.isNone(delay)
                  ? { verdict: "NoRetry/schedule", asked: ["delay"] }
                  : delay.value + 500 > 1000
                    ? { verdict: "NoRetry/time", asked: ["delay"] }
                    : open
                      ? { verdict: "NoRetry/breaker", asked: ["delay", "breaker"] }
                      : !token
                        ? { verdict: "NoRetry/retry_budget", asked: ["delay", "breaker", "token"] }
                        : {
                            verdict: delay.value === 0 ? "RetryNow" : `RetryAfter/${delay.value}`,
                            asked: ["delay", "breaker", "token"]
                          }
            const got =
              verdict._tag === "NoRetry"
                ? `NoRetry/${verdict.reason}`
                : verdict._tag === "RetryAfter"
                  ? `RetryAfter/${verdict.delayMs}`
                  : "RetryNow"
            assert.deepStrictEqual({ verdict: got, asked }, want)
            cases++
          }
    assert.strictEqual(cases, 2 * 4 * 2 * 2)
  })

  it("the wait plus the minimum attempt time must end by the deadline: exactly at it retries, 1 ms past does not", () => {
    const gate = (delayMs: number) =>
      Effect.runSync(
        Disposition.retryGate(
          { attempt: 1, maxAttempts: 3, now: 0, deadline: 1000, minimumMs: 500 },
          {
            delay: Effect.succeed(Option.some(delayMs)),
            breakerOpen: Effect.succeed(false),
            retryToken: Effect.succeed(true)
          }
        )
      )
    assert.deepStrictEqual(gate(500), { _tag: "RetryAfter", delayMs: 500 })
    assert.deepStrictEqual(gate(501), { _tag: "NoRetry", reason: "time" })
  })
})

describe("Disposition.endOfRoute: what a route that ran out of targets ends with", () => {
  const lasts: Array<Failure | undefined> = [undefined, ...Object.values(samples).flat()]
  /** DESIGN §4/§5, written out. */
  const endOracle = (f: RouteFacts): string => {
    const availability =
      f.last !== undefined &&
      (f.last._tag === "RateLimited" || f.last._tag === "ProviderUnavailable" || f.last._tag === "ProviderRejected")
    if (availability && f.degrade) return "Degrade"
    if (availability && f.policyExcluded) return "PolicyViolation"
    if (f.last === undefined) {
      if (!f.stoppedForTime && f.skipped) return "NoEligibleRoute"
      return f.pastDeadline ? "DeadlineExceeded/attempt" : "DeadlineExceeded/before_attempt"
    }
    if (availability && (f.stoppedForTime || f.belowMinimum)) {
      return f.pastDeadline ? "DeadlineExceeded/attempt" : "DeadlineExceeded/before_attempt"
    }
    return `Fail/${f.last._tag}`
  }
  it("every last failure × every combination of route facts", () => {
    let cases = 0
    for (const last of lasts)
      for (const stoppedForTime of bools)
        for (const belowMinimum of bools)
          for (const skipped of bools)
            for (const degrade of bools)
              for (const policyExcluded of bools)
                for (const pastDeadline of bools) {
                  const facts = { last, stoppedForTime, belowMinimum, skipped, degrade, policyExcluded, pastDeadline }
                  const end = Disposition.endOfRoute(facts)
                  const got =
                    end._tag === "DeadlineExceeded"
                      ? `DeadlineExceeded/${end.stage}`
                      : end._tag === "Fail"
                        ? `Fail/${end.failure._tag}`
                        : end._tag
                  assert.strictEqual(got, endOracle(facts), JSON.stringify(facts))
                  if (end._tag === "Fail") assert.strictEqual(end.failure, last)
                  cases++
                }
    assert.strictEqual(cases, lasts.length * 64)
  })
})
