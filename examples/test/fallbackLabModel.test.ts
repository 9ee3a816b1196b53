/**
 * The fallback lab's scenario model against the real engine: every one of the 216 input combinations
 * keeps the lab's invariants, and a few timelines are pinned to the virtual millisecond.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { primaryRef, runLab, secondaryRef } from "../fallback-lab/lab.js"
import {
  allScenarios,
  computeScenario,
  defaultScenario,
  parseScenario,
  renderScenario,
  type Scenario,
  type ScenarioModel,
  stageOf,
  toLabOptions
} from "../fallback-lab/model.js"

const lines = (m: ScenarioModel) => m.events.map((e) => `${e.at} ${e.stage} ${e.kind} ${e.text}`)

/** What the engine returns for a scenario when late work is not observed at all. */
const withoutLateWork = (s: Scenario) =>
  Effect.map(runLab(toLabOptions(s), { lateWork: false }), (r) => ({
    answeredAt: r.answeredAt,
    outcome: r.record.outcome,
    errorTag: r.record.errorTag,
    answeredBy: r.record.outcome === "success" ? r.record.evidence.target : undefined,
    attempts: r.record.evidence.attempts.map((a) => [a.startOffsetMs, a.latencyMs, a.outcome, a.timeoutMs]),
    late: r.provider.filter((l) => l.late !== undefined).length
  }))

describe("fallback lab scenario model", () => {
  it("has 216 distinct scenarios", () => {
    const all = allScenarios()
    assert.strictEqual(all.length, 4 * 3 * 3 * 2 * 3)
    assert.strictEqual(new Set(all.map((s) => JSON.stringify(s))).size, 216)
  })

  it.effect(
    "every combination: no attempt after the deadline, answer by the deadline, waits end at the earliest boundary, incompatible never dispatched, 400 never falls back, late work never replaces the result",
    () =>
      Effect.gen(function* () {
        let withLate = 0
        let outstanding = 0
        for (const s of allScenarios()) {
          const m = yield* computeScenario(s)
          const name = JSON.stringify(s)
          assert.isAtLeast(m.attempts.length, 1, name)
          assert.isAtMost(m.attempts.length, 2, `at most two attempts: ${name}`)
          for (const a of m.attempts) {
            assert.isBelow(a.dispatchedAt, s.deadline, `no attempt starts at or after the deadline: ${name}`)
            // Each wait ends at the earliest of server completion, route timeout and global deadline.
            assert.strictEqual(
              a.endedAt,
              Math.min(a.serverCompletesAt, a.dispatchedAt + s.routeTimeout, s.deadline),
              `wait end: ${name}`
            )
          }
          assert.isAtMost(m.result.at, s.deadline, `answer instant <= deadline: ${name}`)
          assert.strictEqual(m.result.at, m.attempts[m.attempts.length - 1]?.endedAt, name)
          if (s.secondaryContract === "missing-tool") {
            assert.isTrue(
              m.attempts.every((a) => a.route === "primary"),
              `incompatible route never dispatched: ${name}`
            )
            assert.deepStrictEqual(
              m.neverDispatched.map((x) => [x.route, x.reason]),
              [["secondary", "CAPABILITY_MISSING"]]
            )
          } else {
            assert.deepStrictEqual(m.neverDispatched, [])
          }
          if (s.primary === "invalid") {
            assert.deepStrictEqual(
              m.attempts.map((a) => [a.route, a.outcome]),
              [["primary", "invalid_request"]],
              `a 400 never falls back: ${name}`
            )
            assert.strictEqual(m.result.errorTag, "InvalidRequest")
          }
          // One fallback after a 503 or a client timeout, when the secondary may serve and time is left.
          const first = m.attempts[0]
          if (
            first !== undefined &&
            (first.outcome === "unavailable" || first.endedBy === "route-timeout") &&
            s.secondaryContract === "compatible"
          ) {
            assert.deepStrictEqual(
              m.attempts.map((a) => a.route),
              ["primary", "secondary"],
              name
            )
            assert.strictEqual(m.attempts[1]?.dispatchedAt, first.endedAt, name)
          }
          // Late work never replaces the result: the answer comes from an attempt the client waited
          // for to its completion, every late response belongs to an abandoned attempt, and the engine
          // returns exactly what it returns when late work is not observed at all.
          if (m.result.outcome === "success") {
            const answering = m.attempts.find((a) => a.route === m.result.route)
            assert.strictEqual(answering?.endedBy, "server-completion", name)
            assert.isFalse(
              m.lateResponses.some((l) => l.route === m.result.route),
              name
            )
          }
          for (const l of m.lateResponses) {
            const a = m.attempts.find((x) => x.route === l.route)
            assert.notStrictEqual(a?.endedBy, "server-completion", name)
            assert.strictEqual(l.at, a?.serverCompletesAt, name)
            assert.isAbove(l.at, l.abandonedAt, name)
          }
          const plain = yield* withoutLateWork(s)
          assert.deepStrictEqual(
            {
              answeredAt: m.result.at,
              outcome: m.result.outcome === "success" ? "success" : "failed",
              errorTag: m.result.errorTag,
              answeredBy:
                m.result.route === undefined ? undefined : m.result.route === "primary" ? primaryRef : secondaryRef,
              attempts: m.attempts.map((a) => [a.dispatchedAt, a.endedAt - a.dispatchedAt, a.outcome, a.timeoutMs]),
              late: 0
            },
            plain,
            `the same result without late work: ${name}`
          )
          // Every abandoned attempt with a scripted completion shows its late response.
          assert.strictEqual(m.lateResponses.length, m.attempts.filter((a) => a.endedBy !== "server-completion").length)
          for (const o of m.outstandingAtReturn) assert.isAbove(o.completesAt, m.result.at, name)
          // Playback: stages 1..8 in order, the first event in stage 1, the last in stage 8.
          assert.strictEqual(m.events[0]?.stage, 1)
          assert.strictEqual(m.events[m.events.length - 1]?.stage, 8)
          for (let i = 1; i < m.events.length; i++) {
            const e = m.events[i]
            const prev = m.events[i - 1]
            if (e === undefined || prev === undefined) continue
            assert.isAtLeast(e.at, prev.at)
            assert.isAtLeast(e.stage, prev.stage)
          }
          if (m.lateResponses.length > 0) withLate++
          if (m.outstandingAtReturn.length > 0) outstanding++
        }
        // The space does teach late work (not a vacuous loop).
        assert.isAbove(withLate, 20)
        assert.isAbove(outstanding, 20)
      }),
    60_000
  )

  it.effect("default: the slow primary times out, the secondary answers, the primary's answer arrives late", () =>
    Effect.gen(function* () {
      const m = yield* computeScenario(defaultScenario)
      assert.deepStrictEqual(lines(m), [
        "0 1 request request dispatched · global deadline at 800 ms · per-route timeout 500 ms",
        "0 2 dispatch primary dispatched · its timeout is 500 ms = min(800 ms left before the deadline, 500 ms per route)",
        "0 3 wait client waits for the primary until 500 ms at the latest (server completion at 900 ms, route timeout at 500 ms, deadline at 800 ms: the earliest wins)",
        "500 3 route-timeout primary route timeout (500 ms): the client moves on; its server keeps working until 900 ms",
        "500 4 decision client timeout → one fallback: the secondary route",
        "500 5 dispatch secondary dispatched · its timeout is 300 ms = min(300 ms left before the deadline, 500 ms per route)",
        "500 6 wait client waits for the secondary until 800 ms at the latest (server completion at 700 ms, route timeout at 1000 ms, deadline at 800 ms: the earliest wins)",
        "700 6 server-completion secondary server completes in time: answers 200",
        "700 7 result client returns: answer from the secondary route (fallback)",
        "900 8 late-response late response from the primary (200) 400 ms after the client moved on: ignored, it never replaces the result"
      ])
      assert.deepStrictEqual(m.result, {
        at: 700,
        outcome: "success",
        route: "secondary",
        fallbackUsed: true,
        text: "answer from the secondary route (fallback)"
      })
      assert.deepStrictEqual(m.lateResponses, [{ route: "primary", at: 900, httpStatus: 200, abandonedAt: 500 }])
      assert.deepStrictEqual(m.outstandingAtReturn, [{ route: "primary", completesAt: 900 }])
      assert.strictEqual(m.endsAt, 900)
    })
  )

  it.effect("the global deadline cuts the fallback; both servers answer late", () =>
    Effect.gen(function* () {
      const m = yield* computeScenario({ ...defaultScenario, routeTimeout: 250, deadline: 400, secondary: "slow" })
      assert.deepStrictEqual(
        m.attempts.map((a) => [a.route, a.dispatchedAt, a.timeoutMs, a.endedAt, a.endedBy, a.outcome]),
        [
          ["primary", 0, 250, 250, "route-timeout", "timeout"],
          ["secondary", 250, 150, 400, "deadline", "timeout"]
        ]
      )
      assert.strictEqual(m.result.errorTag, "DeadlineExceeded")
      assert.strictEqual(m.result.at, 400)
      assert.deepStrictEqual(
        m.lateResponses.map((l) => [l.route, l.at, l.abandonedAt]),
        [
          ["primary", 900, 250],
          ["secondary", 1150, 400]
        ]
      )
      assert.deepStrictEqual(m.outstandingAtReturn, [
        { route: "primary", completesAt: 900 },
        { route: "secondary", completesAt: 1150 }
      ])
      assert.deepStrictEqual(
        m.events.filter((e) => e.kind === "deadline").map((e) => [e.at, e.route, e.text]),
        [
          [
            400,
            "secondary",
            "global deadline reached: the client stops waiting for the secondary; its server keeps working until 1150 ms"
          ]
        ]
      )
    })
  )

  it.effect("a 200 that arrives late, while the client waits for the fallback, does not rescue the request", () =>
    Effect.gen(function* () {
      const m = yield* computeScenario({ ...defaultScenario, routeTimeout: 500, deadline: 1600, secondary: "slow" })
      assert.deepStrictEqual(
        m.events
          .filter((e) => e.kind === "route-timeout" || e.kind === "late-response" || e.kind === "result")
          .map((e) => [e.at, e.kind, e.route]),
        [
          [500, "route-timeout", "primary"],
          [900, "late-response", "primary"],
          [1000, "route-timeout", "secondary"],
          [1000, "result", undefined],
          [1400, "late-response", "secondary"]
        ]
      )
      assert.deepStrictEqual([m.result.outcome, m.result.errorTag], ["failed", "ProviderUnavailable"])
      assert.deepStrictEqual(m.lateResponses, [
        { route: "primary", at: 900, httpStatus: 200, abandonedAt: 500 },
        { route: "secondary", at: 1400, httpStatus: 200, abandonedAt: 1000 }
      ])
      assert.deepStrictEqual(m.outstandingAtReturn, [{ route: "secondary", completesAt: 1400 }])
    })
  )

  it.effect("a 400 ends the request; a missing tool means the secondary is never dispatched", () =>
    Effect.gen(function* () {
      const invalid = yield* computeScenario({ ...defaultScenario, primary: "invalid" })
      assert.deepStrictEqual(lines(invalid).slice(-2), [
        "100 7 decision 400 ends the request: replaying a malformed request does not fix it (no fallback)",
        "100 8 result client returns: InvalidRequest"
      ])
      const tool = yield* computeScenario({
        ...defaultScenario,
        primary: "unavailable",
        secondaryContract: "missing-tool"
      })
      assert.deepStrictEqual(lines(tool).slice(0, 2), [
        "0 1 request request dispatched · global deadline at 800 ms · per-route timeout 500 ms",
        "0 2 excluded secondary route is never dispatched: CAPABILITY_MISSING (missing: tools)"
      ])
      assert.strictEqual(tool.result.at, 100)
      assert.strictEqual(tool.result.errorTag, "ProviderUnavailable")
      assert.include(renderScenario(tool), "attempts made: primary (unavailable)")
    })
  )

  it("stages spread events from 1 to 8", () => {
    assert.deepStrictEqual(
      [0, 1, 2, 3, 4, 5].map((i) => stageOf(i, 6)),
      [1, 2, 4, 5, 7, 8]
    )
    assert.strictEqual(stageOf(0, 1), 8)
  })

  it("parses scenarios from loose values", () => {
    assert.deepStrictEqual(parseScenario({}), defaultScenario)
    assert.deepStrictEqual(parseScenario({ primary: "invalid", routeTimeout: "250", deadline: "1600" }), {
      ...defaultScenario,
      primary: "invalid",
      routeTimeout: 250,
      deadline: 1600
    })
    assert.include(String(parseScenario({ routeTimeout: "300" })), 'routeTimeout: "300" is not one of 250, 500, 1000')
  })
})
