import { HttpClientRequest } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import { Effect, Exit, Fiber } from "effect"
import { afterEach, beforeEach, it as plainIt, vi } from "vitest"
import * as Deadlines from "@modelgate/testing/DeadlineScenarios"
import { abortableUntil } from "../src/internal/ownedDeadline.js"
import { serve as serveLoopback } from "./loopback.js"

interface Observed {
  readonly outcome: "value" | "cut" | "failed"
  readonly at: number
  /** When the work's signal aborted, if it did. */
  readonly abortedAt: number | undefined
}

/** `bounded`'s outcome (completion wins a tie); a cut lands 1 fake ms late (see core's test). */
const expected = (s: Deadlines.Scenario): Observed =>
  s.after !== undefined && s.after <= Deadlines.bound
    ? { outcome: s.fails ? "failed" : "value", at: s.after, abortedAt: undefined }
    : { outcome: "cut", at: Deadlines.bound + 1, abortedAt: Deadlines.bound + 1 }

describe("abortableUntil: the adapter-owned timer (live clock, fake timers)", () => {
  // Fake timers, immediates and clock (`fakeTimers`): no real time passes.
  beforeEach(() => void vi.useFakeTimers(Deadlines.fakeTimers))
  afterEach(() => void vi.useRealTimers())

  plainIt("every scenario, in order, has bounded's outcome at bounded's instant", async () => {
    const seen: Array<Observed> = []
    for (const s of Deadlines.scenarios) {
      const start = Date.now()
      let abortedAt: number | undefined
      const step = abortableUntil<"done", "boom">(start + Deadlines.bound, (finish) => {
        if (s.after !== undefined) {
          setTimeout(() => finish(s.fails ? Effect.fail("boom") : Effect.succeed("done")), s.after)
        }
        return () => {
          abortedAt = Date.now() - start
        }
      })
      const { value: exit, at } = await Deadlines.settleUnderFakeTimers(Effect.runPromiseExit(step), start, (ms) =>
        vi.advanceTimersByTimeAsync(ms)
      )
      seen.push({
        outcome: Exit.isFailure(exit) ? "failed" : exit.value === undefined ? "cut" : "value",
        at,
        abortedAt
      })
      // Nothing is left behind: the step's own timer is cleared when it completes or cuts.
      await vi.runAllTimersAsync()
    }
    assert.deepStrictEqual(seen, Deadlines.scenarios.map(expected))
  })

  plainIt("interrupting the step aborts its work and clears its timer", async () => {
    let aborted = false
    let settled = false
    const fiber = Effect.runFork(
      abortableUntil<"done", never>(Date.now() + Deadlines.bound, () => () => {
        aborted = true
      }).pipe(Effect.ensuring(Effect.sync(() => (settled = true))))
    )
    await vi.advanceTimersByTimeAsync(10)
    const interrupted = Effect.runPromise(Fiber.interrupt(fiber))
    await vi.advanceTimersByTimeAsync(0)
    await interrupted
    assert.isTrue(aborted)
    assert.isTrue(settled)
    assert.strictEqual(vi.getTimerCount(), 0)
  })
})

describe("exchangeUntil over the direct transport (loopback)", () => {
  /** A server that answers `/answer` at once and never answers anything else. */
  const serve = serveLoopback((request, response) => {
    request.resume()
    if (request.url === "/answer") {
      response.writeHead(200, { "content-type": "application/json" })
      response.end('{"ok":true}')
    }
  })

  const options = { provider: "test", maxBytes: 1024, requestId: () => undefined }

  it.scoped("an answer before the deadline is the answer; a deadline already due cuts the exchange", () =>
    Effect.gen(function* () {
      const server = yield* serve
      const http = yield* HttpTransport.makeUndici()
      const exchangeUntil = http.exchangeUntil
      if (exchangeUntil === undefined) return assert.fail("the direct transport owns deadlines")
      const answer = yield* exchangeUntil(HttpClientRequest.post(`${server.url}/answer`), options, Date.now() + 60_000)
      assert.strictEqual(answer?.status, 200)
      assert.strictEqual(answer?.body, '{"ok":true}')
      const cut = yield* exchangeUntil(HttpClientRequest.post(`${server.url}/never`), options, Date.now())
      assert.isUndefined(cut)
      // The pool still serves the next request.
      const again = yield* exchangeUntil(HttpClientRequest.post(`${server.url}/answer`), options, Date.now() + 60_000)
      assert.strictEqual(again?.status, 200)
    })
  )

  it.scoped("the HttpClient transport does not own deadlines (the engine bounds it)", () =>
    Effect.gen(function* () {
      const http = yield* HttpTransport.HttpTransport
      assert.isUndefined(http.exchangeUntil)
    }).pipe(Effect.provide(HttpTransport.layerHttpClient), Effect.provide(NodeHttpClient.layerUndici))
  )
})
