/**
 * The `canary` scenario: `ticket.classify` moves to a new model (`gpt-5-mini`) as a canary with a
 * rollout. Five tickets a second for 80 s, on virtual time (`TestClock`), through the real
 * gateway and canary controller: the share ramps 10% → 25% → 50% after clean 20-second windows;
 * at 0:40 the provider updates the new model and one answer in three becomes broken JSON; at the
 * 1:00 window boundary the controller rolls the canary back and every later ticket stays on the
 * baseline. The timeline prints each window's comparison and each change.
 */
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as CanaryController from "@modelgate/core/CanaryController"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { CallRecord } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Clock, Effect, Fiber, Layer, Schema, TestClock, TestContext } from "effect"
import type { DemoReport } from "./program.js"
import * as Render from "./render.js"
import * as Simulated from "./simulated.js"

const baselineRef = "model://openai/gpt-4.1-mini@eu"
const candidateRef = "model://openai/gpt-5-mini@eu"
/** When the provider's update breaks the candidate (virtual ms). */
const updateAt = 40_000
const ticketsPerSecond = 5
/** Length of one evaluation window (virtual ms). */
const windowMs = 20_000
/** Four windows: two ramps, the update, the rollback, and one window after it. */
const runMs = 4 * windowMs

const target = (ref: string, model: string, price: readonly [number, number]) => {
  const simulated = Simulated.target(ref, model, price)
  return { ...simulated, capabilities: { vision: false, tools: true, streaming: true, ...simulated.capabilities } }
}

const Classification = Schema.Struct({
  category: Schema.Literal("billing", "technical", "other"),
  confidence: Schema.Number
})

const config = {
  targets: [target(baselineRef, "gpt-4.1-mini", [0.4, 1.6]), target(candidateRef, "gpt-5-mini", [0.25, 2])],
  workflows: [
    {
      name: "ticket.classify",
      policyVersion: "classify-2026-11",
      prompt: { id: "ticket.classify", version: "4" },
      output: { schema: "Classification", schemaVersion: "1" },
      route: [baselineRef],
      timeout: 5000,
      regions: ["eu"],
      dataClass: "internal",
      canary: {
        id: "classify-gpt-5-mini",
        target: candidateRef,
        share: 0.1,
        stickiness: "session",
        rollout: { steps: [0.1, 0.25, 0.5, 1], window: windowMs, minSamples: 5 }
      }
    }
  ]
}

/**
 * The simulated OpenAI endpoint: the baseline answers in 300 ms; the candidate in 220 ms, and from
 * the update on one answer in three is broken JSON.
 */
const simulatedOpenAi = Layer.effect(
  ProviderAdapter.tag("openai"),
  Effect.sync(() => {
    let candidateCalls = 0
    return {
      provider: "openai",
      generate: (request: ProviderAdapter.ProviderRequest) =>
        Effect.gen(function* () {
          const candidate = request.target.ref === candidateRef
          yield* Effect.sleep(candidate ? 220 : 300)
          const now = yield* Clock.currentTimeMillis
          const broken = candidate && now >= updateAt && ++candidateCalls % 3 === 0
          const text = broken
            ? '{"category": "billing", "confid'
            : JSON.stringify({ category: "billing", confidence: 0.9 })
          return Simulated.answer(request, text, { inputTokens: 180, outputTokens: 14 })
        }),
      stream: Simulated.noStream
    }
  })
)

const commandOf = (i: number) =>
  Schema.decodeUnknownSync(ModelCommand)({
    workflow: "ticket.classify",
    tenant: "acme",
    sessionKey: `ticket-${i}`,
    messages: [
      { _tag: "system", content: "Prompt: ticket.classify. Classify the support ticket." },
      { _tag: "user", content: `Ticket ${i}: my invoice shows the wrong amount.` }
    ]
  })

const clock = (ms: number) => {
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`
}
const pct = (x: number) => `${(x * 100).toFixed(0)}%`
const stats = (s: CanaryController.WindowStats | undefined) =>
  s === undefined
    ? "—"
    : `${s.calls} calls · errors ${pct(s.errorRate)} · invalid ${pct(s.invalidOutputRate)} · p95 ${s.p95LatencyMs} ms · ${Render.usd(s.costPerCall)}/call`

/** One line per change of the canary (with the window it judged) and per note, in time order. */
export const timeline = (
  changes: ReadonlyArray<CanaryController.Change>,
  notes: ReadonlyArray<{ readonly at: number; readonly text: string }> = []
): Array<string> =>
  [
    ...changes.map((c) => ({ at: c.at, change: c, text: "" })),
    ...notes.map((n) => ({ at: n.at, change: undefined, text: n.text }))
  ]
    .sort((a, b) => a.at - b.at)
    .flatMap(({ change: c, at, text }) => {
      if (c === undefined) return [`${clock(at)}  ${text}`]
      if (c.action === "started") return [`${clock(c.at)}  started at ${pct(c.to)} of the sessions`]
      const verdict =
        c.action === "ramped"
          ? `clean window → ramped ${pct(c.from)} → ${pct(c.to)}`
          : c.action === "completed"
            ? `clean window at the last step → completed at ${pct(c.to)}`
            : `ROLLED BACK ${pct(c.from)} → 0%: ${c.reasons.join("; ")}`
      return [
        `${clock(c.at)}  candidate ${stats(c.candidate)}`,
        `       baseline  ${stats(c.baseline)}`,
        `       ${verdict}`
      ]
    })

/** Where the tickets went, one mark per 2 s: `!` a candidate call fell back, else `c` a candidate call, else `b`. */
export const sideStrip = (records: ReadonlyArray<CallRecord>): string => {
  const slots = new Map<number, string>()
  for (const r of records) {
    const slot = Math.floor(r.evidence.startedAt / 2000)
    const side = r.evidence.canary?.side === "candidate" ? (r.evidence.fallbackUsed ? "!" : "c") : "b"
    const had = slots.get(slot)
    // The most telling mark of the slot: a fallback, else a candidate call, else baseline.
    if (had === undefined || side === "!" || (side === "c" && had === "b")) slots.set(slot, side)
  }
  let out = ""
  for (let i = 0; i < runMs / 2000; i++) out += slots.get(i) ?? " "
  return out
}

const encodeRecord = Schema.encodeSync(CallRecord)

/** Runs the canary scenario on virtual time; prints the timeline (or the CallRecords as JSON lines). */
export const runCanary = (options: Render.Output): Effect.Effect<DemoReport> =>
  Effect.gen(function* () {
    const { style, write } = options
    const line = Render.lineOf(options)
    const gateway = yield* ModelGateway.ModelGateway
    const controller = yield* CanaryController.CanaryController
    line(style.bold("modelgate demo · scenario canary"))
    line(
      `${style.dim("setup  ")} ticket.classify moves from gpt-4.1-mini to gpt-5-mini as a canary (10% → 25% → 50% → 100%, 20-second windows); at 0:40 the provider updates gpt-5-mini and one answer in three is broken JSON`
    )
    line(
      `${style.dim("shows  ")} ramps only after clean windows; the automatic rollback at the 1:00 window boundary; every later ticket on the baseline (virtual time, five tickets a second)`
    )
    line()
    // The tickets, each in its own fiber (children of the traffic fiber, which outlives the last
    // one); the clock is moved in one go.
    const traffic = yield* Effect.fork(
      Effect.forEach(
        Array.from({ length: (runMs / 1000) * ticketsPerSecond }, (_, i) => i),
        (i) =>
          Effect.zipRight(
            Effect.fork(Effect.either(gateway.generate(commandOf(i)))),
            Effect.sleep(1000 / ticketsPerSecond)
          ),
        { discard: true }
      ).pipe(Effect.zipRight(Effect.sleep(5_000)))
    )
    yield* TestClock.adjust(runMs + 5_000)
    yield* Fiber.join(traffic)
    const changes = yield* controller.history
    const records = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
    if (options.json) {
      for (const r of records) write(`${JSON.stringify(encodeRecord(r))}\n`)
    } else {
      line(style.bold("━━ canary classify-gpt-5-mini · ticket.classify"))
      const update = { at: updateAt, text: "(the provider updates gpt-5-mini: one answer in three is now broken JSON)" }
      for (const l of timeline(changes, [update])) {
        line(`  ${l.includes("ROLLED BACK") ? style.red(l) : l.includes("ramped") ? style.green(l) : l}`)
      }
      line()
      line(`  sides, a mark per 2 s (! a candidate call fell back to the baseline, c candidate, b baseline only):`)
      line(`  0:00 ${sideStrip(records)} ${clock(runMs)}`)
      const after = records.filter((r) => r.evidence.startedAt >= 3 * windowMs)
      const onCandidate = after.filter((r) => r.evidence.canary?.side === "candidate").length
      line(`  after the rollback: ${after.length - onCandidate} of ${after.length} tickets on the baseline`)
      line()
    }
    return { scenario: "canary", records, tasks: [], requests: [], balances: [] } satisfies DemoReport
  }).pipe(
    Effect.provide(
      ModelGateway.layerJson(config, { schemas: { Classification } }).pipe(
        Layer.provideMerge(simulatedOpenAi),
        // Budgets, concurrency and health by default; the recorder and the controller below.
        ModelGateway.withDefaults(),
        Layer.provideMerge(Layer.merge(CanaryController.layer, CallRecorder.layerMemory))
      )
    ),
    // Virtual time: the 80 s run at once, at exact instants.
    Effect.provide(TestContext.TestContext),
    Effect.orDie
  )
