import { assert, describe, it } from "@effect/vitest"
import { Disposition, Errors, ModelGateway } from "@modelgate/core"
import { Duration, Effect, Match } from "effect"
import { command, gatewayLayer } from "./fixtures.js"

const descriptions = {
  Refusal: () => "refused",
  RateLimited: () => "rate limited",
  ProviderUnavailable: () => "unavailable",
  InvalidOutput: () => "invalid output",
  InvalidRequest: () => "invalid request",
  ProviderRejected: () => "rejected",
  PolicyViolation: () => "policy",
  AmbiguousOutcome: () => "ambiguous",
  BudgetExceeded: () => "budget",
  DeadlineExceeded: () => "deadline",
  NoEligibleRoute: () => "no route",
  StoreError: () => "store",
  RunExhausted: () => "run exhausted"
}
const { NoEligibleRoute: _noRoute, ...allButNoRoute } = descriptions

/** Handles every tag of the closed union; adding a tag to the union makes this fail to compile. */
export const describeError = Match.type<Errors.GatewayError>().pipe(Match.tagsExhaustive(descriptions))

export const missingTag = Match.type<Errors.GatewayError>().pipe(
  // @ts-expect-error NoEligibleRoute is not handled: tagsExhaustive must reject this
  Match.tagsExhaustive(allButNoRoute)
)

describe("errors", () => {
  it.effect("catchTags over every tag leaves no error; omitting one does not type-check as never", () =>
    Effect.gen(function* () {
      const handlers = {
        Refusal: () => Effect.succeed("refused"),
        RateLimited: () => Effect.succeed("rl"),
        ProviderUnavailable: () => Effect.succeed("pu"),
        InvalidOutput: () => Effect.succeed("io"),
        InvalidRequest: () => Effect.succeed("ir"),
        ProviderRejected: () => Effect.succeed("pr"),
        PolicyViolation: () => Effect.succeed("pv"),
        AmbiguousOutcome: () => Effect.succeed("ao"),
        BudgetExceeded: () => Effect.succeed("be"),
        DeadlineExceeded: () => Effect.succeed("de"),
        NoEligibleRoute: () => Effect.succeed("ne"),
        StoreError: () => Effect.succeed("se"),
        RunExhausted: () => Effect.succeed("re")
      }
      const { DeadlineExceeded: _handled, ...allButDeadline } = handlers
      const reply = ModelGateway.generate(command("ticket.reply")).pipe(Effect.map(() => "ok"))
      const all: Effect.Effect<string, never, ModelGateway.ModelGateway> = reply.pipe(Effect.catchTags(handlers))
      // @ts-expect-error DeadlineExceeded is not handled, so the error channel is not never
      const partial: Effect.Effect<string, never, ModelGateway.ModelGateway> = reply.pipe(
        Effect.catchTags(allButDeadline)
      )
      assert.strictEqual(yield* all, "ok")
      assert.strictEqual(typeof partial, "object")
      assert.strictEqual(
        describeError(new Errors.DeadlineExceeded({ stage: "call", timeoutMs: 1, elapsedMs: 1 })),
        "deadline"
      )
      assert.strictEqual(
        describeError(new Errors.RunExhausted({ runId: "run-1", reason: "budget", steps: [] })),
        "run exhausted"
      )
    }).pipe(Effect.provide(gatewayLayer({})))
  )

  it("retryable errors carry retry-after; the disposition table (not the error) says they are retried", () => {
    const e = new Errors.RateLimited({
      target: Errors.RateLimited.fields.target.make("model://a/b@eu"),
      retryAfter: Duration.seconds(2)
    })
    assert.deepStrictEqual(e.retryAfter, Duration.seconds(2))
    assert.isTrue(Disposition.isTemporaryKind("rate_limited"))
    assert.notProperty(e, "isRetryable")
    assert.include(e.message, "2000 ms")
  })
})
