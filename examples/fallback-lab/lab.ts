/**
 * The fallback lab: one call through the real engine under `TestClock`, with the scripted provider
 * behind a primary and a secondary route. The timeline it prints is exact virtual time: when each
 * attempt started and ended, how long the engine waited before a retry, which responses arrived
 * too late and were ignored, and when the caller got its answer.
 */
import * as Budgets from "@modelgate/core/Budgets"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import * as Health from "@modelgate/core/Health"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import type { AttemptRecord, CallRecord } from "@modelgate/core/ModelResult"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import {
  Cause,
  Clock,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Option,
  Random,
  Schema,
  TestClock,
  TestContext
} from "effect"
import type { Style } from "../support-ticket/render.js"
import { attemptOutcome, short, timeline } from "../support-ticket/render.js"

export const primaryRef = "model://lab-primary/model-a@eu"
export const secondaryRef = "model://lab-secondary/model-b@eu"

/** One scripted answer, as written on the command line. */
export type OutcomeSpec =
  | { readonly _tag: "ok"; readonly after: number }
  | { readonly _tag: "503"; readonly after: number }
  | { readonly _tag: "429"; readonly after: number; readonly retryAfter: number | undefined }
  | { readonly _tag: "400"; readonly after: number }
  | { readonly _tag: "invalid"; readonly after: number }
  | { readonly _tag: "refusal"; readonly after: number }
  | { readonly _tag: "hang" }

/** `ok:200`, `503:50`, `429:10:2000` (retry-after ms), `400:20`, `invalid:80`, `refusal:60`, `hang`; a comma-separated list scripts successive attempts (the last repeats). */
export const parseOutcomes = (text: string): ReadonlyArray<OutcomeSpec> | string => {
  const out: Array<OutcomeSpec> = []
  for (const part of text.split(",")) {
    const [kind = "", a, b] = part.trim().split(":")
    const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined)
    const after = num(a)
    if (kind === "hang") {
      out.push({ _tag: "hang" })
      continue
    }
    if (after === undefined) return `"${part}": expected <kind>:<ms>, e.g. ok:200, 503:50, 429:10:2000, hang`
    switch (kind) {
      case "ok":
      case "503":
      case "400":
      case "invalid":
      case "refusal":
        out.push({ _tag: kind, after })
        break
      case "429":
        out.push({ _tag: "429", after, retryAfter: num(b) })
        break
      default:
        return `"${part}": unknown outcome "${kind}" (ok, 503, 429, 400, invalid, refusal, hang)`
    }
  }
  return out
}

const describeOutcome = (o: OutcomeSpec): string => {
  switch (o._tag) {
    case "ok":
      return `answers after ${o.after} ms`
    case "503":
      return `503 after ${o.after} ms`
    case "429":
      return `429 after ${o.after} ms${o.retryAfter !== undefined ? ` (retry-after ${o.retryAfter} ms)` : ""}`
    case "400":
      return `400 after ${o.after} ms`
    case "invalid":
      return `invalid JSON after ${o.after} ms`
    case "refusal":
      return `refuses after ${o.after} ms`
    case "hang":
      return "never answers"
  }
}

const toScript = (o: OutcomeSpec, label: string): ScriptedProvider.Outcome => {
  switch (o._tag) {
    case "ok":
      return ScriptedProvider.success({ after: o.after, value: { answer: `from the ${label}` } })
    case "503":
      return ScriptedProvider.unavailable({ after: o.after })
    case "429":
      return ScriptedProvider.rateLimited({
        after: o.after,
        ...(o.retryAfter !== undefined ? { retryAfter: o.retryAfter } : {})
      })
    case "400":
      return ScriptedProvider.invalidRequest({ after: o.after })
    case "invalid":
      return ScriptedProvider.invalidJson({ after: o.after })
    case "refusal":
      return ScriptedProvider.refusal({ after: o.after })
    case "hang":
      return ScriptedProvider.hang
  }
}

export interface LabOptions {
  readonly primary: ReadonlyArray<OutcomeSpec>
  readonly secondary: ReadonlyArray<OutcomeSpec>
  /** Per-attempt timeout of each route (ms). */
  readonly primaryTimeout: number
  readonly secondaryTimeout: number
  /** The call's end-to-end deadline (ms). */
  readonly deadline: number
  /** Attempts per route, the first included. */
  readonly attempts: number
  /** No attempt starts with less time than this left (ms). */
  readonly minimumAttemptTime: number
  /** First backoff before jitter (ms); doubles per retry. */
  readonly baseDelay: number
  /** The random draw of full jitter, in [0, 1): backoff = draw × base × 2^n. */
  readonly jitter: number
  /**
   * Whether the secondary may serve this request: `yes`, `region` (it runs in the US and the
   * request is EU-only), `schema` (its strict mode lacks a JSON-Schema feature the request needs) or
   * `tool` (it cannot call tools and the request offers one).
   */
  readonly secondaryCompatible: "yes" | "region" | "schema" | "tool"
  /** The request offers a read-only tool (`lookup_order`); implied by `secondaryCompatible: "tool"`. */
  readonly offersTool?: boolean
}

export const defaults: LabOptions = {
  primary: [{ _tag: "hang" }],
  secondary: [{ _tag: "ok", after: 200 }],
  primaryTimeout: 400,
  secondaryTimeout: 400,
  deadline: 1000,
  attempts: 2,
  minimumAttemptTime: 100,
  baseDelay: 200,
  jitter: 0.5,
  secondaryCompatible: "yes"
}

/** One line of the virtual timeline. */
export interface LabEvent {
  readonly at: number
  readonly text: string
}

export interface LabReport {
  readonly events: ReadonlyArray<LabEvent>
  readonly record: CallRecord
  /** What the scripted provider saw: every attempt with its virtual start and end. */
  readonly provider: ReadonlyArray<ScriptedProvider.AttemptLog>
  /** Virtual instant the caller got its answer (or its error). */
  readonly answeredAt: number
  readonly outcome: string
}

const Answer = Schema.Struct({ answer: Schema.String })

const definition = (o: LabOptions) => ({
  targets: [
    {
      ref: primaryRef,
      provider: "lab-primary",
      model: "model-a",
      regions: ["eu"],
      dataClasses: ["internal"],
      capabilities: {
        tools: true,
        structuredOutput: { mode: "json_schema" },
        contextWindow: 128_000,
        maxOutputTokens: 4096
      },
      pricing: { inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "lab" },
      limits: { maxAttempts: o.attempts, perAttemptTimeout: o.primaryTimeout, minimumAttemptTime: o.minimumAttemptTime }
    },
    {
      ref: secondaryRef,
      provider: "lab-secondary",
      model: "model-b",
      regions: [o.secondaryCompatible === "region" ? "us" : "eu"],
      dataClasses: ["internal"],
      capabilities: {
        tools: o.secondaryCompatible !== "tool",
        structuredOutput:
          o.secondaryCompatible === "schema"
            ? { mode: "json_schema_strict", supportedFeatures: ["enum"] }
            : { mode: "json_schema" },
        contextWindow: 128_000,
        maxOutputTokens: 4096
      },
      pricing: { inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "lab" },
      limits: {
        maxAttempts: o.attempts,
        perAttemptTimeout: o.secondaryTimeout,
        minimumAttemptTime: o.minimumAttemptTime
      }
    }
  ],
  workflows: [
    {
      name: "lab.answer",
      policyVersion: "lab-1",
      prompt: { id: "lab", version: "1" },
      output: { schema: "Answer", schemaVersion: "1" },
      route: [primaryRef, secondaryRef],
      timeout: o.deadline,
      retry: { baseDelay: o.baseDelay, maxDelay: Math.max(o.baseDelay, 60_000) },
      regions: ["eu", "us"],
      dataClass: "internal"
    }
  ]
})

const command = (o: LabOptions) =>
  Schema.decodeSync(ModelCommand)({
    workflow: "lab.answer",
    tenant: "lab",
    messages: [{ _tag: "user", content: "What is the answer?" }],
    ...(o.secondaryCompatible === "region" ? { regions: ["eu"] } : {}),
    ...(o.secondaryCompatible === "schema" ? { requires: { schemaFeatures: ["pattern"] } } : {}),
    ...(o.secondaryCompatible === "tool" || o.offersTool === true ? { tools: [lookupOrder] } : {})
  })

/** The read-only tool the request offers when it needs one. */
const lookupOrder = {
  name: "lookup_order",
  description: "Looks an order up by its id (read-only).",
  parameters: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] }
}

const scriptOf = (specs: ReadonlyArray<OutcomeSpec>, i: number): OutcomeSpec | undefined =>
  specs[Math.min(i, specs.length - 1)]

/** Everything the timeline says, in virtual time, ordered (ties keep the order they happened in). */
const buildEvents = (
  o: LabOptions,
  record: CallRecord,
  logs: ReadonlyArray<ScriptedProvider.AttemptLog>,
  answeredAt: number,
  outcome: string
): Array<LabEvent> => {
  const events: Array<LabEvent & { readonly seq: number }> = []
  let seq = 0
  const add = (at: number, text: string) => events.push({ at, text, seq: seq++ })
  const e = record.evidence
  add(0, `call starts · deadline at ${o.deadline} ms`)
  if (e.excluded.length > 0) {
    for (const x of e.excluded) add(0, `${short(x.target)} excluded: ${x.reason} (${x.detail})`)
  }
  const perTarget = new Map<string, number>()
  let previous: AttemptRecord | undefined
  for (const a of e.attempts) {
    const start = a.startOffsetMs
    const end = a.startOffsetMs + a.latencyMs
    const route = a.target === primaryRef ? "primary" : "secondary"
    if (previous !== undefined) {
      const prevEnd = previous.startOffsetMs + previous.latencyMs
      if (previous.target === a.target && start > prevEnd) {
        add(
          prevEnd,
          `waits ${start - prevEnd} ms before retrying (backoff${previous.retryAfterMs !== undefined ? `, retry-after ${previous.retryAfterMs} ms` : ""})`
        )
      } else if (previous.target !== a.target) {
        add(start, `falls back to the ${route}`)
      }
    }
    const remaining = o.deadline - start
    const perAttempt = route === "primary" ? o.primaryTimeout : o.secondaryTimeout
    add(
      start,
      `${route} #${a.attempt} starts · timeout ${a.timeoutMs} ms = min(${remaining} ms left, ${perAttempt} ms per attempt)`
    )
    const i = perTarget.get(a.target) ?? 0
    perTarget.set(a.target, i + 1)
    const spec = scriptOf(route === "primary" ? o.primary : o.secondary, i)
    const log = logs.filter((l) => l.target === a.target)[i]
    const abandoned = log?.interrupted === true || a.outcome === "timeout" || a.outcome === "cancelled"
    const note =
      abandoned && spec?._tag === "hang"
        ? " (it would never have answered)"
        : !abandoned && a.latencyMs === a.timeoutMs
          ? " (it answered at the instant of its timeout: a tie counts as a completion)"
          : ""
    add(end, `${route} #${a.attempt} ends: ${attemptOutcome(a, record.mode)}${note}`)
    // Observed by the scripted provider (`lateWork`): the abandoned attempt's server finished anyway.
    if (abandoned && spec !== undefined && log?.late !== undefined && log.late.at > end) {
      add(
        log.late.at,
        `${route} #${a.attempt}'s response (${describeOutcome(spec)}) arrives: ignored, the attempt was abandoned at ${end} ms`
      )
    }
    previous = a
  }
  const last = e.attempts[e.attempts.length - 1]
  if (record.outcome === "failed" && last !== undefined && record.errorTag === "DeadlineExceeded") {
    const lastEnd = last.startOffsetMs + last.latencyMs
    if (o.deadline - lastEnd > 0 && o.deadline - lastEnd < o.minimumAttemptTime) {
      add(
        lastEnd,
        `no attempt starts: ${o.deadline - lastEnd} ms left < ${o.minimumAttemptTime} ms minimum attempt time`
      )
    }
  }
  add(answeredAt, `caller gets ${outcome}`)
  return events.sort((a, b) => a.at - b.at || a.seq - b.seq).map(({ at, text }) => ({ at, text }))
}

/**
 * Runs one call under `TestClock`: forks it, advances virtual time past the deadline and every
 * scripted delay, and reads what happened.
 */
export const runLab = (
  o: LabOptions,
  /** `lateWork: false` runs without observing abandoned attempts' completions (the engine's result is the same). */
  run: { readonly lateWork?: boolean } = {}
): Effect.Effect<LabReport> =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const provider = yield* ScriptedProvider.ScriptedProvider
    const recorder = yield* CallRecorder.MemoryRecorder
    const fiber = yield* Effect.fork(
      gateway.generate(command(o)).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Effect.map(Clock.currentTimeMillis, (at) => ({ exit, at })))
      )
    )
    const longest = Math.max(
      0,
      ...[...o.primary, ...o.secondary].map((s) =>
        s._tag === "hang" ? 0 : s.after + (s._tag === "429" ? (s.retryAfter ?? 0) : 0)
      )
    )
    yield* TestClock.adjust(Duration.millis(o.deadline + longest + 1))
    const { exit, at } = yield* Fiber.join(fiber)
    const [record] = yield* recorder.records
    if (record === undefined) return yield* Effect.dieMessage("no CallRecord")
    const outcome = Exit.match(exit, {
      onSuccess: (r) =>
        `its answer from ${short(r.evidence.target ?? "")}${r.evidence.fallbackUsed ? " (fallback)" : ""}: ${JSON.stringify(r.content.value)}`,
      onFailure: (cause) =>
        Option.match(Cause.failureOption(cause), {
          onNone: () => Cause.pretty(cause),
          onSome: (error) => `${error._tag}: ${error.message}`
        })
    })
    const logs = yield* provider.attempts
    return { events: buildEvents(o, record, logs, at, outcome), record, provider: logs, answeredAt: at, outcome }
  }).pipe(
    Effect.provide(
      ModelGateway.layerJson(definition(o), { schemas: { Answer } }).pipe(
        Layer.provideMerge(
          ScriptedProvider.layer({
            providers: ["lab-primary", "lab-secondary"],
            // Abandoned attempts' servers keep working: their completions are logged as late responses.
            lateWork: run.lateWork ?? true,
            scripts: {
              [primaryRef]: o.primary.map((s) => toScript(s, "primary")),
              [secondaryRef]: o.secondary.map((s) => toScript(s, "secondary"))
            }
          })
        ),
        Layer.provideMerge(
          Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
        ),
        Layer.orDie
      )
    ),
    Effect.withRandom(Random.fixed([o.jitter])),
    Effect.provide(TestContext.TestContext)
  )

/** The report as text. */
export const render = (o: LabOptions, report: LabReport, style: Style): string => {
  const lines: Array<string> = []
  const spec = (s: ReadonlyArray<OutcomeSpec>) => s.map(describeOutcome).join(", then ")
  lines.push(style.bold("fallback lab · one call, virtual time (TestClock), the real engine and the scripted provider"))
  lines.push(
    `  ${style.dim("primary  ")} ${short(primaryRef)}: ${spec(o.primary)} · timeout ${o.primaryTimeout} ms per attempt · ${o.attempts} attempts`
  )
  lines.push(
    `  ${style.dim("secondary")} ${short(secondaryRef)}: ${spec(o.secondary)} · timeout ${o.secondaryTimeout} ms per attempt · ${
      o.secondaryCompatible === "yes"
        ? "compatible"
        : `incompatible (${o.secondaryCompatible === "tool" ? "cannot call the request's tool" : o.secondaryCompatible})`
    }`
  )
  lines.push(
    `  ${style.dim("call     ")} deadline ${o.deadline} ms · minimum attempt time ${o.minimumAttemptTime} ms · backoff ${o.baseDelay} ms × 2ⁿ × jitter ${o.jitter}`
  )
  lines.push("")
  for (const e of report.events) {
    const text = e.text.startsWith("caller gets")
      ? style.bold(e.text)
      : e.text.includes("ignored")
        ? style.yellow(e.text)
        : e.text.includes("excluded")
          ? style.magenta(e.text)
          : e.text
    lines.push(`  ${style.cyan(`${String(e.at).padStart(6)} ms`)}  ${text}`)
  }
  if (report.record.evidence.attempts.length > 0) {
    lines.push("")
    for (const l of timeline(report.record, style, 50)) lines.push(`  ${l}`)
  }
  lines.push("")
  return lines.join("\n")
}
