/**
 * The `scored` scenario: `ticket.triage` chooses its target by score (`selection: "scored"`) and
 * escalates on a low-confidence answer. Three small-to-large targets with quality, latency and
 * cost classes and verified scores on the `triage` segment; the cheap fast model wins the score;
 * when it answers with a confidence under 0.6 the workflow's check escalates the ticket to the
 * best eligible stronger target (`gpt-4.1`), within the same deadline and reservation. On virtual
 * time (`TestClock`) with a simulated OpenAI endpoint: exact instants, no mock server, no faults.
 */
import * as CallRecorder from "@modelgate/core/CallRecorder"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { CallRecord } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Effect, Fiber, Layer, Schema, TestClock, TestContext } from "effect"
import type { DemoReport } from "./program.js"
import * as Render from "./render.js"
import * as Simulated from "./simulated.js"

const refs = {
  mini: "model://openai/gpt-4.1-mini@eu",
  nano: "model://openai/gpt-4.1-nano@eu",
  large: "model://openai/gpt-4.1@eu"
} as const

const verified = (score: number) => ({ triage: { score, evalVersion: "triage-eval-3", evaluatedAt: "2026-11-20" } })

const target = (
  ref: string,
  model: string,
  price: readonly [number, number],
  classes: { readonly quality: string; readonly latency: string; readonly cost: string },
  quality: ReturnType<typeof verified>
) => ({ ...Simulated.target(ref, model, price), classes, quality })

export const Triage = Schema.Struct({
  category: Schema.Literal("billing", "technical", "shipping", "account", "other"),
  confidence: Schema.Number
})

export const triageConfig = {
  targets: [
    target(refs.nano, "gpt-4.1-nano", [0.1, 0.4], { quality: "low", latency: "fast", cost: "low" }, verified(0.71)),
    target(
      refs.mini,
      "gpt-4.1-mini",
      [0.4, 1.6],
      { quality: "standard", latency: "fast", cost: "low" },
      verified(0.82)
    ),
    target(refs.large, "gpt-4.1", [2, 8], { quality: "high", latency: "slow", cost: "high" }, verified(0.93))
  ],
  workflows: [
    {
      name: "ticket.triage",
      policyVersion: "triage-policy-1",
      prompt: { id: "ticket.triage", version: "1" },
      output: { schema: "Triage", schemaVersion: "1" },
      route: [refs.large, refs.mini, refs.nano],
      selection: "scored",
      segment: "triage",
      timeout: 5000,
      regions: ["eu"],
      dataClass: "internal",
      maxOutputTokens: 64,
      // A low-confidence answer goes to a high-quality target.
      escalation: { tier: "high", check: "lowConfidence" }
    }
  ]
}

/** The workflow's escalation check, by the name its `escalation.check` gives. */
export const escalationChecks = {
  lowConfidence: (value: unknown) => Schema.is(Triage)(value) && value.confidence < 0.6
}

/** The triage answers by ticket: the small models are unsure about the second one. */
const answers: ReadonlyArray<{ readonly subject: string; readonly category: string; readonly confidence: number }> = [
  { subject: "Invoice shows the wrong amount", category: "billing", confidence: 0.93 },
  { subject: "Charged twice, or a refund still pending?", category: "billing", confidence: 0.48 }
]

/** The simulated OpenAI endpoint: nano 120 ms, mini 180 ms, gpt-4.1 600 ms (then sure of itself). */
export const simulatedOpenAi = Layer.succeed(ProviderAdapter.tag("openai"), {
  provider: "openai",
  generate: (request: ProviderAdapter.ProviderRequest) =>
    Effect.gen(function* () {
      const ref = request.target.ref
      yield* Effect.sleep(ref === refs.large ? 600 : ref === refs.mini ? 180 : 120)
      const text = request.messages.map((m) => (typeof m.content === "string" ? m.content : "")).join("\n")
      const ticket = answers.find((a) => text.includes(a.subject)) ?? answers[0]!
      const confidence = ref === refs.large ? 0.95 : ticket.confidence
      const answer = JSON.stringify({ category: ticket.category, confidence })
      return Simulated.answer(request, answer, { inputTokens: 160, outputTokens: 12 })
    }),
  stream: Simulated.noStream
})

export const commandOf = (subject: string) =>
  Schema.decodeUnknownSync(ModelCommand)({
    workflow: "ticket.triage",
    tenant: "acme",
    messages: [
      { _tag: "system", content: "Prompt: ticket.triage. Triage the support ticket: category and confidence." },
      { _tag: "user", content: `Subject: ${subject}` }
    ]
  })

const encodeRecord = Schema.encodeSync(CallRecord)

/** The decision of a scored call: reason, route id and each target's score, best first. */
export const scoreLines = (record: CallRecord, style: Render.Style): Array<string> => {
  const e = record.evidence
  const lines = [`${e.selectionReason ?? "—"}  ${style.dim(e.routeId ?? "")}`]
  for (const s of e.scores ?? []) {
    lines.push(
      `${Render.short(s.target).padEnd(28)} total ${s.total.toFixed(4)}  ${style.dim(
        `quality ${s.quality} · latency ${s.latency} · cost ${s.cost} · health ${s.health} · affinity ${s.affinity}`
      )}`
    )
  }
  for (const x of e.escalations ?? []) {
    lines.push(
      style.yellow(
        `escalation (${x.signal}): ${Render.short(x.from)} [${x.fromTier ?? "—"}] → ${x.to === undefined ? "none eligible" : `${Render.short(x.to)} [${x.toTier ?? "—"}]`}`
      )
    )
  }
  return lines
}

/** Runs the scored scenario on virtual time; prints decisions and timelines (or the CallRecords as JSON lines). */
export const runScored = (options: Render.Output): Effect.Effect<DemoReport> =>
  Effect.gen(function* () {
    const { style, write } = options
    const line = Render.lineOf(options)
    const gateway = yield* ModelGateway.ModelGateway
    line(style.bold("modelgate demo · scenario scored"))
    line(
      `${style.dim("setup  ")} ticket.triage is scored (quality, latency, cost, health, affinity) over gpt-4.1-nano, gpt-4.1-mini and gpt-4.1, and escalates an answer with confidence under 0.6`
    )
    line(
      `${style.dim("shows  ")} each target's score and the selection reason; the unsure answer escalated to gpt-4.1 in the timeline (virtual time)`
    )
    line()
    for (const ticket of answers) {
      const fiber = yield* Effect.fork(Effect.exit(gateway.generate(commandOf(ticket.subject))))
      yield* TestClock.adjust(5_000)
      yield* Fiber.join(fiber)
    }
    const records = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
    if (options.json) {
      for (const r of records) write(`${JSON.stringify(encodeRecord(r))}\n`)
    } else {
      for (const [i, r] of records.entries()) {
        line(style.bold(`━━ "${answers[i]?.subject ?? ""}" · ticket.triage`))
        for (const l of scoreLines(r, style)) line(`    ${style.dim("score".padEnd(9))} ${l}`)
        for (const l of Render.timeline(r, style)) line(`    ${style.dim("timeline".padEnd(9))} ${l}`)
        line(`    ${style.dim("served".padEnd(9))} ${Render.short(r.evidence.target ?? "—")}`)
        line()
      }
    }
    return { scenario: "scored", records, tasks: [], requests: [], balances: [] } satisfies DemoReport
  }).pipe(
    Effect.provide(
      ModelGateway.layerJson(triageConfig, {
        schemas: { Triage },
        escalationChecks
      }).pipe(
        Layer.provideMerge(simulatedOpenAi),
        ModelGateway.withDefaults(),
        Layer.provideMerge(CallRecorder.layerMemory)
      )
    ),
    Effect.provide(TestContext.TestContext),
    Effect.orDie
  )
