/**
 * The fallback lab's scenario model, shared by the command line (`pnpm fallback-lab scenario`) and
 * the web page (`pnpm lab`): one request, two routes, the inputs the page offers, and every event of
 * the run in virtual milliseconds.
 *
 * Nothing here decides what the gateway does: {@link computeScenario} runs the real engine
 * (`ModelGateway` under `TestClock`, the scripted provider behind both routes, through
 * {@link runLab}) and describes its call record and the provider's log. The scripted provider runs
 * with `lateWork`, so an attempt the client abandoned still completes on the server at its scripted
 * instant and shows up as a late response; the engine never sees it.
 */
import type { AttemptRecord } from "@modelgate/core/ModelResult"
import { Effect } from "effect"
import { type LabOptions, type LabReport, primaryRef, runLab } from "./lab.js"
import {
  type AttemptView,
  contractLabels,
  type EventKind,
  fixtures,
  type LabEvent,
  type LateResponseView,
  type ResultView,
  type Route,
  type Scenario,
  type ScenarioModel,
  stageOf
} from "./scenario.js"

export * from "./scenario.js"

/**
 * The lab options of a scenario: the policy the page teaches, expressed as gateway configuration —
 * one attempt per route (at most two in all, one fallback), the per-route timeout on both targets,
 * the deadline as the workflow's timeout, a request that offers a read-only tool, and a secondary
 * that cannot call tools under the "missing a required tool" contract. The engine does the rest.
 */
export const toLabOptions = (s: Scenario): LabOptions => ({
  primary: [fixtures[s.primary].spec],
  secondary: [fixtures[s.secondary].spec],
  primaryTimeout: s.routeTimeout,
  secondaryTimeout: s.routeTimeout,
  deadline: s.deadline,
  attempts: 1,
  // The smallest the configuration accepts: the deadline alone decides whether an attempt starts.
  minimumAttemptTime: 1,
  baseDelay: 0,
  jitter: 0,
  secondaryCompatible: s.secondaryContract === "missing-tool" ? "tool" : "yes",
  offersTool: true
})

const routeOf = (target: string): Route => (target === primaryRef ? "primary" : "secondary")

const statusText = (outcome: string, httpStatus: number | undefined): string =>
  outcome === "success"
    ? "answers 200"
    : outcome === "unavailable"
      ? `unavailable ${httpStatus ?? 503}`
      : outcome === "invalid_request"
        ? `invalid request ${httpStatus ?? 400}`
        : outcome

/**
 * Runs the scenario through the real engine and describes what happened.
 */
export const computeScenario = (s: Scenario): Effect.Effect<ScenarioModel> =>
  Effect.map(runLab(toLabOptions(s)), (report) => describeRun(s, report))

const describeRun = (s: Scenario, report: LabReport): ScenarioModel => {
  const records = report.record.evidence.attempts
  const raw: Array<Omit<LabEvent, "seq" | "stage">> = []
  const add = (at: number, kind: EventKind, text: string, route?: Route) =>
    raw.push(route === undefined ? { at, kind, text } : { at, kind, text, route })
  const evidence = report.record.evidence
  add(0, "request", `request dispatched · global deadline at ${s.deadline} ms · per-route timeout ${s.routeTimeout} ms`)
  const neverDispatched = evidence.excluded.map((x) => ({
    route: routeOf(x.target),
    reason: x.reason,
    detail: x.detail
  }))
  for (const x of neverDispatched) {
    add(0, "excluded", `${x.route} route is never dispatched: ${x.reason} (${x.detail})`, x.route)
  }
  const attempts: Array<AttemptView> = []
  const lateResponses: Array<LateResponseView> = []
  records.forEach((a, i) => {
    const route = routeOf(a.target)
    // The provider's log of this attempt: the n-th on its target.
    const log = report.provider.filter((l) => l.target === a.target)[a.attempt - 1]
    const start = a.startOffsetMs
    const end = a.startOffsetMs + a.latencyMs
    const serverCompletesAt = log?.scriptedCompletionAt ?? end
    const completed = log !== undefined && !log.interrupted
    const endedBy: AttemptView["endedBy"] = completed
      ? "server-completion"
      : end >= s.deadline
        ? "deadline"
        : "route-timeout"
    attempts.push({
      route,
      dispatchedAt: start,
      timeoutMs: a.timeoutMs,
      endedAt: end,
      endedBy,
      outcome: a.outcome,
      ...(a.httpStatus !== undefined ? { httpStatus: a.httpStatus } : {}),
      serverCompletesAt
    })
    add(
      start,
      "dispatch",
      `${route} dispatched · its timeout is ${a.timeoutMs} ms = min(${s.deadline - start} ms left before the deadline, ${s.routeTimeout} ms per route)`,
      route
    )
    add(
      start,
      "wait",
      `client waits for the ${route} until ${start + a.timeoutMs} ms at the latest (server completion at ${serverCompletesAt} ms, route timeout at ${start + s.routeTimeout} ms, deadline at ${s.deadline} ms: the earliest wins)`,
      route
    )
    if (endedBy === "server-completion") {
      add(end, "server-completion", `${route} server completes in time: ${statusText(a.outcome, a.httpStatus)}`, route)
    } else if (endedBy === "deadline") {
      add(
        end,
        "deadline",
        `global deadline reached: the client stops waiting for the ${route}; its server keeps working until ${serverCompletesAt} ms`,
        route
      )
    } else {
      add(
        end,
        "route-timeout",
        `${route} route timeout (${a.timeoutMs} ms): the client moves on; its server keeps working until ${serverCompletesAt} ms`,
        route
      )
    }
    const next = records[i + 1]
    if (next !== undefined) {
      add(
        end,
        "decision",
        `${a.outcome === "timeout" ? "client timeout" : statusText(a.outcome, a.httpStatus)} → one fallback: the ${routeOf(next.target)} route`,
        route
      )
    } else if (report.record.outcome !== "success") {
      add(end, "decision", stopReason(a, neverDispatched.length > 0, end >= s.deadline), route)
    }
    if (log?.late !== undefined) {
      lateResponses.push({ route, at: log.late.at, httpStatus: log.late.httpStatus, abandonedAt: end })
      add(
        log.late.at,
        "late-response",
        `late response from the ${route} (${log.late.httpStatus ?? "?"}) ${log.late.at - end} ms after the client moved on: ignored, it never replaces the result`,
        route
      )
    }
  })
  const answeredAt = report.answeredAt
  const success = report.record.outcome === "success"
  const answeredBy = evidence.target !== undefined ? routeOf(evidence.target) : undefined
  const result: ResultView = {
    at: answeredAt,
    outcome: success ? "success" : "failed",
    ...(answeredBy !== undefined && success ? { route: answeredBy } : {}),
    fallbackUsed: evidence.fallbackUsed,
    ...(report.record.errorTag !== undefined ? { errorTag: report.record.errorTag } : {}),
    text: success
      ? `answer from the ${answeredBy ?? "?"} route${evidence.fallbackUsed ? " (fallback)" : ""}`
      : report.outcome
  }
  add(answeredAt, "result", `client returns: ${success ? result.text : (report.record.errorTag ?? "failed")}`)
  const outstandingAtReturn = attempts
    .filter((a) => a.endedBy !== "server-completion" && a.serverCompletesAt > answeredAt)
    .map((a) => ({ route: a.route, completesAt: a.serverCompletesAt }))
  // Ordered by instant; ties keep the order above (the sort is stable; the engine's order: a
  // completion before the boundary it ties).
  const events = [...raw].sort((x, y) => x.at - y.at).map((e, i) => ({ ...e, seq: i, stage: stageOf(i, raw.length) }))
  return {
    scenario: s,
    events,
    attempts,
    neverDispatched,
    lateResponses,
    outstandingAtReturn,
    result,
    endsAt: events.reduce((m, e) => Math.max(m, e.at), 0)
  }
}

const stopReason = (a: AttemptRecord, excluded: boolean, atDeadline: boolean): string =>
  a.outcome === "invalid_request"
    ? "400 ends the request: replaying a malformed request does not fix it (no fallback)"
    : atDeadline
      ? "no time left before the global deadline: no further attempt"
      : a.outcome === "success"
        ? "done"
        : excluded
          ? "no fallback: the only other route cannot serve this request"
          : "at most two attempts: no route left"

/** The model as text (the command line's `scenario` mode). */
export const renderScenario = (m: ScenarioModel): string => {
  const s = m.scenario
  const lines = [
    `fallback lab · primary ${fixtures[s.primary].label} · secondary ${fixtures[s.secondary].label}, ${contractLabels[s.secondaryContract]} · per-route timeout ${s.routeTimeout} ms · global deadline ${s.deadline} ms`,
    ""
  ]
  for (const e of m.events) lines.push(`${String(e.at).padStart(6)} ms  [${e.stage}] ${e.kind.padEnd(17)} ${e.text}`)
  lines.push("")
  lines.push(`result (${m.result.at} ms): ${m.result.outcome} · ${m.result.text}`)
  lines.push(`attempts made: ${m.attempts.map((a) => `${a.route} (${a.outcome})`).join(", ") || "none"}`)
  lines.push(
    `late responses: ${m.lateResponses.map((l) => `${l.route} at ${l.at} ms (${l.httpStatus ?? "?"})`).join(", ") || "none"}`
  )
  lines.push(
    `outstanding when the client returned: ${m.outstandingAtReturn.map((o) => `${o.route} (until ${o.completesAt} ms)`).join(", ") || "none"}`
  )
  return `${lines.join("\n")}\n`
}
