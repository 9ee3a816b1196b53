/**
 * The fallback lab's scenario: the page's five inputs, the shape of a computed run (events in
 * virtual milliseconds, attempts, late responses) and the playback stages. Plain data and pure
 * functions without the engine, so the browser bundle stays small; `model.ts` computes runs.
 */
import type { OutcomeSpec } from "./lab.js"

/** What the primary route's server does. */
export const primaryFixtures = ["success", "unavailable", "invalid", "slow"] as const
/** @see primaryFixtures */
export type PrimaryFixture = (typeof primaryFixtures)[number]
/** What the secondary route's server does. */
export const secondaryFixtures = ["success", "unavailable", "slow"] as const
/** @see secondaryFixtures */
export type SecondaryFixture = (typeof secondaryFixtures)[number]
/** Per-route timeout (ms), applied separately to each dispatched route. */
export const routeTimeouts = [250, 500, 1000] as const
/** @see routeTimeouts */
export type RouteTimeout = (typeof routeTimeouts)[number]
/** Global deadline (ms from the original dispatch). */
export const globalDeadlines = [400, 800, 1600] as const
/** @see globalDeadlines */
export type GlobalDeadline = (typeof globalDeadlines)[number]
/** Whether the secondary can serve the request (it offers a tool the secondary may lack). */
export const secondaryContracts = ["compatible", "missing-tool"] as const
/** @see secondaryContracts */
export type SecondaryContract = (typeof secondaryContracts)[number]

/** Every fixture: what it answers and after how many virtual milliseconds. */
export const fixtures = {
  success: { label: "success at 200 ms", spec: { _tag: "ok", after: 200 } },
  unavailable: { label: "unavailable 503 at 100 ms", spec: { _tag: "503", after: 100 } },
  invalid: { label: "invalid request 400 at 100 ms", spec: { _tag: "400", after: 100 } },
  slow: { label: "slow success at 900 ms", spec: { _tag: "ok", after: 900 } }
} as const satisfies Record<PrimaryFixture, { readonly label: string; readonly spec: OutcomeSpec }>

/** Labels of the secondary contracts. */
export const contractLabels: Record<SecondaryContract, string> = {
  compatible: "compatible",
  "missing-tool": "missing a required tool"
}

/** One experiment: the page's five inputs. */
export interface Scenario {
  readonly primary: PrimaryFixture
  readonly routeTimeout: RouteTimeout
  readonly deadline: GlobalDeadline
  readonly secondaryContract: SecondaryContract
  readonly secondary: SecondaryFixture
}

/** The page opens on this one: the primary is slow, the client falls back, the primary's answer arrives late. */
export const defaultScenario: Scenario = {
  primary: "slow",
  routeTimeout: 500,
  deadline: 800,
  secondaryContract: "compatible",
  secondary: "success"
}

/** All 4 × 3 × 3 × 2 × 3 = 216 scenarios. */
export const allScenarios = (): ReadonlyArray<Scenario> =>
  primaryFixtures.flatMap((primary) =>
    routeTimeouts.flatMap((routeTimeout) =>
      globalDeadlines.flatMap((deadline) =>
        secondaryContracts.flatMap((secondaryContract) =>
          secondaryFixtures.map((secondary) => ({ primary, routeTimeout, deadline, secondaryContract, secondary }))
        )
      )
    )
  )

/** A scenario from loose values (a query string, command-line flags), or what is wrong with them. */
export const parseScenario = (input: Readonly<Record<string, string | undefined>>): Scenario | string => {
  const problems: Array<string> = []
  const pick = <T extends string | number>(name: keyof Scenario, options: ReadonlyArray<T>, fallback: T): T => {
    const raw = input[name]
    if (raw === undefined) return fallback
    const found = options.find((o) => String(o) === raw)
    if (found === undefined) problems.push(`${name}: "${raw}" is not one of ${options.join(", ")}`)
    return found ?? fallback
  }
  const scenario: Scenario = {
    primary: pick("primary", primaryFixtures, defaultScenario.primary),
    routeTimeout: pick("routeTimeout", routeTimeouts, defaultScenario.routeTimeout),
    deadline: pick("deadline", globalDeadlines, defaultScenario.deadline),
    secondaryContract: pick("secondaryContract", secondaryContracts, defaultScenario.secondaryContract),
    secondary: pick("secondary", secondaryFixtures, defaultScenario.secondary)
  }
  return problems.length > 0 ? problems.join("; ") : scenario
}

/** The two routes. */
export type Route = "primary" | "secondary"

/** Kinds of event, in the order the page's legend lists them. */
export type EventKind =
  | "request"
  | "excluded"
  | "dispatch"
  | "wait"
  | "server-completion"
  | "route-timeout"
  | "deadline"
  | "decision"
  | "late-response"
  | "result"

/** One event of the run, at its virtual instant. */
export interface LabEvent {
  /** Position in the list (ties keep the order the engine produced them in). */
  readonly seq: number
  /** Virtual milliseconds from the original dispatch. */
  readonly at: number
  readonly kind: EventKind
  readonly route?: Route
  readonly text: string
  /** The playback stage (1–8) that reveals it. */
  readonly stage: number
}

/** One dispatched attempt. */
export interface AttemptView {
  readonly route: Route
  readonly dispatchedAt: number
  /** The timeout it ran under: min(time left before the deadline, the route's timeout). */
  readonly timeoutMs: number
  /** When the client stopped waiting for it. */
  readonly endedAt: number
  /** What ended the wait: the server's answer, the route's timeout, or the global deadline. */
  readonly endedBy: "server-completion" | "route-timeout" | "deadline"
  /** The engine's attempt outcome (`success`, `unavailable`, `invalid_request`, `timeout`, …). */
  readonly outcome: string
  readonly httpStatus?: number
  /** When the route's server finishes its work (its scripted completion). */
  readonly serverCompletesAt: number
}

/** A server's answer that arrived after the client had moved on. */
export interface LateResponseView {
  readonly route: Route
  readonly at: number
  readonly httpStatus: number | undefined
  /** When the client abandoned the attempt. */
  readonly abandonedAt: number
}

/** What the caller got. */
export interface ResultView {
  readonly at: number
  readonly outcome: "success" | "failed"
  /** The route whose answer was used. */
  readonly route?: Route
  readonly fallbackUsed: boolean
  readonly errorTag?: string
  readonly text: string
}

/** Everything the page plays back and exports. */
export interface ScenarioModel {
  readonly scenario: Scenario
  readonly events: ReadonlyArray<LabEvent>
  readonly attempts: ReadonlyArray<AttemptView>
  readonly neverDispatched: ReadonlyArray<{ readonly route: Route; readonly reason: string; readonly detail: string }>
  readonly lateResponses: ReadonlyArray<LateResponseView>
  /** Routes whose server was still working when the client returned. */
  readonly outstandingAtReturn: ReadonlyArray<{ readonly route: Route; readonly completesAt: number }>
  readonly result: ResultView
  /** The last event's instant (the end of the virtual timeline). */
  readonly endsAt: number
}

/** Playback: eight stages over sixty teaching seconds. */
export const stages = 8
/** @see stages */
export const teachingSeconds = 60
/** Seconds per stage (7.5). */
export const stageSeconds = teachingSeconds / stages

/** The stage (1–8) that reveals event `index` of `count`: spread evenly, the first in stage 1, the last in stage 8. */
export const stageOf = (index: number, count: number): number =>
  count <= 1 ? stages : 1 + Math.round((index * (stages - 1)) / (count - 1))
