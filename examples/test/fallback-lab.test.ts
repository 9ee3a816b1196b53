/**
 * The fallback lab prints exact virtual timelines: these are the instants it must print.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { parse } from "../fallback-lab/cli.js"
import { defaults, type LabOptions, parseOutcomes, render, runLab } from "../fallback-lab/lab.js"
import * as Render from "../support-ticket/render.js"

const lab = (argv: ReadonlyArray<string>) => {
  const options = parse(argv)
  if (typeof options === "string") throw new Error(options)
  return Effect.map(runLab(options), (report) => ({ options, report }))
}
const lines = (events: ReadonlyArray<{ readonly at: number; readonly text: string }>) =>
  events.map((e) => `${e.at} ${e.text}`)

describe("fallback lab", () => {
  it.effect("default: the primary hangs twice, the squeezed fallback gets the last 100 ms", () =>
    Effect.gen(function* () {
      const { report } = yield* lab([])
      assert.deepStrictEqual(lines(report.events), [
        "0 call starts · deadline at 1000 ms",
        "0 primary #1 starts · timeout 400 ms = min(1000 ms left, 400 ms per attempt)",
        "400 primary #1 ends: timed out after 400 ms, may have been processed (it would never have answered)",
        "400 waits 100 ms before retrying (backoff)",
        "500 primary #2 starts · timeout 400 ms = min(500 ms left, 400 ms per attempt)",
        "900 primary #2 ends: timed out after 400 ms, may have been processed (it would never have answered)",
        "900 falls back to the secondary",
        "900 secondary #1 starts · timeout 100 ms = min(100 ms left, 400 ms per attempt)",
        "1000 secondary #1 ends: timed out after 100 ms, may have been processed",
        "1000 caller gets DeadlineExceeded: deadline of 1000 ms exceeded at 1000 ms (attempt)",
        "1100 secondary #1's response (answers after 200 ms) arrives: ignored, the attempt was abandoned at 1000 ms"
      ])
      assert.strictEqual(report.answeredAt, 1000)
      // What the scripted provider saw agrees: three attempts, each interrupted at its timeout.
      assert.deepStrictEqual(
        report.provider.map((l) => [l.startedAt, l.endedAt, l.interrupted]),
        [
          [0, 400, true],
          [500, 900, true],
          [900, 1000, true]
        ]
      )
    })
  )

  it.effect("a 503 twice, then a compatible fallback answers", () =>
    Effect.gen(function* () {
      const { report } = yield* lab(["--primary", "503:50", "--secondary", "ok:200"])
      assert.strictEqual(report.answeredAt, 400)
      assert.strictEqual(report.record.outcome, "success")
      assert.isTrue(report.record.evidence.fallbackUsed)
      assert.deepStrictEqual(
        report.record.evidence.attempts.map((a) => [a.startOffsetMs, a.latencyMs, a.outcome]),
        [
          [0, 50, "unavailable"],
          [150, 50, "unavailable"],
          [200, 200, "success"]
        ]
      )
    })
  )

  it.effect("a late response is ignored; a response at the timeout's instant is a completion", () =>
    Effect.gen(function* () {
      const late = yield* lab(["--primary", "ok:450", "--secondary", "ok:50", "--timeout", "400"])
      assert.include(
        lines(late.report.events),
        "450 primary #1's response (answers after 450 ms) arrives: ignored, the attempt was abandoned at 400 ms"
      )
      assert.strictEqual(late.report.answeredAt, 950)
      const tie = yield* lab(["--primary", "ok:400", "--timeout", "400"])
      assert.strictEqual(tie.report.answeredAt, 400)
      assert.strictEqual(tie.report.record.outcome, "success")
      assert.isFalse(tie.report.record.evidence.fallbackUsed)
    })
  )

  it.effect("a retry-after beyond the deadline: no wait, immediate fallback", () =>
    Effect.gen(function* () {
      const { report } = yield* lab(["--primary", "429:10:5000"])
      assert.deepStrictEqual(lines(report.events).slice(2, 5), [
        "10 primary #1 ends: 429 rate limited, retry-after 5 s",
        "10 falls back to the secondary",
        "10 secondary #1 starts · timeout 400 ms = min(990 ms left, 400 ms per attempt)"
      ])
      assert.strictEqual(report.answeredAt, 210)
    })
  )

  it.effect("an incompatible secondary is never tried: the call is refused with the reason", () =>
    Effect.gen(function* () {
      const region = yield* lab(["--secondary-compatible", "region"])
      assert.strictEqual(region.report.answeredAt, 900)
      assert.strictEqual(region.report.record.errorTag, "PolicyViolation")
      assert.isTrue(region.report.provider.every((l) => l.target.includes("primary")))
      const schema = yield* lab(["--secondary-compatible", "schema", "--primary", "503:10", "--attempts", "1"])
      assert.deepStrictEqual(
        schema.report.record.evidence.excluded.map((x) => x.reason),
        ["SCHEMA_FEATURE_UNSUPPORTED"]
      )
      assert.strictEqual(schema.report.answeredAt, 10)
    })
  )

  it.effect("a refusal stops at once: no retry, no fallback", () =>
    Effect.gen(function* () {
      const { report } = yield* lab(["--primary", "refusal:30"])
      assert.strictEqual(report.answeredAt, 30)
      assert.strictEqual(report.record.errorTag, "Refusal")
      assert.strictEqual(report.provider.length, 1)
    })
  )

  it.effect("renders plain text with the Gantt chart", () =>
    Effect.gen(function* () {
      const { options, report } = yield* lab(["--primary", "503:50"])
      const text = render(options, report, Render.plain)
      assert.notInclude(text, "\u001b[")
      assert.include(text, "   400 ms  caller gets its answer from lab-secondary/model-b@eu (fallback)")
      assert.match(text, /lab-primary\/model-a@eu #1 +█+·+ +0 → +50 ms {2}503 unavailable/)
    })
  )

  it("flags", () => {
    const o = parse(["--primary", "503:50,ok:20", "--timeout=300", "--secondary-timeout", "250", "--deadline", "2000"])
    assert.deepStrictEqual(o, {
      ...defaults,
      primary: [
        { _tag: "503", after: 50 },
        { _tag: "ok", after: 20 }
      ],
      primaryTimeout: 300,
      secondaryTimeout: 250,
      deadline: 2000
    } satisfies LabOptions)
    assert.deepStrictEqual(parseOutcomes("429:10:2000,hang"), [
      { _tag: "429", after: 10, retryAfter: 2000 },
      { _tag: "hang" }
    ])
    assert.include(String(parseOutcomes("boom:1")), "unknown outcome")
    assert.include(String(parse(["--jitter", "1.5"])), "invalid value")
    assert.include(String(parse(["--deadline"])), "needs a value")
  })
})
