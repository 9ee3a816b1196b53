/**
 * The demo's scenarios, and the mock "model" behind the mock provider server: it answers each
 * request with the ticket's scripted values, in the wire format of the provider that was called,
 * after applying the scenario's faults.
 */
import type * as Mock from "@modelgate/testing/MockProviderServer"
import { prompts } from "./gateway.js"
import { type Ticket, ticketIn } from "./tickets.js"

export const scenarioNames = [
  "normal",
  "outage",
  "rate-limit",
  "slow",
  "budget",
  "residency",
  "canary",
  "scored"
] as const
export type ScenarioName = (typeof scenarioNames)[number]

export const isScenarioName = (s: string): s is ScenarioName => scenarioNames.some((name) => name === s)

export interface Scenario {
  readonly name: ScenarioName
  /** One line: what goes wrong. */
  readonly setup: string
  /** One line: what to look for in the output. */
  readonly shows: string
  /** Tenant budgets (currency units per day); tenants not listed are unlimited. */
  readonly budgets: Readonly<Record<string, number>>
  /** Faults by provider wire format, applied before the scripted answer. */
  readonly fault: (request: Mock.RecordedRequest, workflow: string) => Mock.Behavior | undefined
}

const generous = { acme: 1, globex: 1 }

const unavailable: Mock.Behavior = {
  _tag: "Failure",
  status: 503,
  latencyMs: 15,
  error: { type: "server_error", message: "The server is temporarily unavailable." }
}

export const scenarios: Record<ScenarioName, Scenario> = {
  normal: {
    name: "normal",
    setup: "every provider answers",
    shows:
      "each workflow's policy and route; globex (EU-only contract) never sees a US target; the follow-up step survives a timeout after its tool ran",
    budgets: generous,
    fault: () => undefined
  },
  outage: {
    name: "outage",
    setup: "OpenAI answers 503 to every request",
    shows:
      "classify retries its small OpenAI model once (maxAttempts 2), the streamed draft its large one not at all (maxAttempts 1); both then fall back to a compatible target of another provider",
    budgets: generous,
    fault: (request) => (request.provider === "openai" ? unavailable : undefined)
  },
  "rate-limit": {
    name: "rate-limit",
    setup: "OpenAI answers 429 with retry-after: 30 s, longer than any deadline",
    shows: "no sleep on a retry-after the deadline cannot honour: immediate fallback",
    budgets: generous,
    fault: (request) =>
      request.provider === "openai"
        ? {
            _tag: "Failure",
            status: 429,
            latencyMs: 10,
            headers: { "retry-after": "30" },
            error: { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached for requests." }
          }
        : undefined
  },
  slow: {
    name: "slow",
    setup: "OpenAI streams start 900 ms after the request; gpt-4.1's time-to-first-token limit is 300 ms",
    shows:
      "the streamed draft gives up on the slow route at its TTFT limit and falls back before any text reached the caller",
    budgets: generous,
    fault: (request, workflow) =>
      request.provider === "openai" && workflow === prompts.draftReply.id ? { _tag: "Success", ttftMs: 900 } : undefined
  },
  budget: {
    name: "budget",
    setup: "tenant acme has a daily budget of $0.004",
    shows:
      "every call reserves its worst case before any traffic; a call whose expensive targets do not fit what acme has left excludes them (BUDGET_DOES_NOT_FIT) and runs on a cheaper one; once no target fits, the call sends nothing and gets the workflow's degraded answer where it has one, else fails with BudgetExceeded (smaller calls may still fit); globex is unaffected",
    budgets: { acme: 0.004, globex: 1 },
    fault: () => undefined
  },
  residency: {
    name: "residency",
    setup: "every EU provider (OpenAI, Anthropic, the EU vLLM) answers 503; only the US Gemini targets are up",
    shows:
      "acme's calls fall back to the US, except the EU-only, confidential extract (degraded); globex's (EU-only) calls never do: degraded answers where the workflow has one, otherwise refused with the excluded targets and why",
    budgets: generous,
    fault: (request) =>
      request.provider === "openai" || request.provider === "anthropic" || request.provider === "openai-compatible"
        ? unavailable
        : undefined
  },
  // Its own program on virtual time (`canary.ts`, run by `runAll`): no mock server, no faults here.
  canary: {
    name: "canary",
    setup: "ticket.classify moves to gpt-5-mini as a canary; at 0:40 a provider update breaks one answer in three",
    shows: "the share ramps after clean windows and rolls back automatically at the next window boundary",
    budgets: generous,
    fault: () => undefined
  },
  // Its own program on virtual time (`scored.ts`, run by `runAll`).
  scored: {
    name: "scored",
    setup: "ticket.triage is scored over three models and escalates an answer with confidence under 0.6",
    shows: "each target's score and the selection reason; an escalation to a stronger model in the timeline",
    budgets: generous,
    fault: () => undefined
  }
}

/** Which workflow a request belongs to, from the `Prompt:` line of its system message. */
export const workflowIn = (text: string): string | undefined => /Prompt: (ticket\.\w+)/.exec(text)?.[1]

/** Usage the mock reports per workflow (so costs are the same on every run). */
const usageOf: Record<string, Mock.UsageSpec> = {
  "ticket.classify": { input: 180, output: 14 },
  "ticket.extract": { input: 230, output: 32 },
  "ticket.draftReply": { input: 320, output: 90 },
  "ticket.followUp": { input: 260, output: 40 }
}

/** The scripted answer of the mock model (no fault). */
export const answer = (request: Mock.RecordedRequest, ticket: Ticket, workflow: string): Mock.Behavior => {
  const usage = usageOf[workflow] ?? { input: 100, output: 20 }
  const latencyMs = request.provider === "gemini" ? 40 : 25
  switch (workflow) {
    case "ticket.classify":
      return { _tag: "Success", latencyMs, usage, json: ticket.model.classification }
    case "ticket.extract":
      return { _tag: "Success", latencyMs, usage, json: ticket.model.fields }
    case "ticket.draftReply":
      return { _tag: "Success", latencyMs, usage, text: ticket.model.reply, ttftMs: 60, chunkDelayMs: 8, chunkSize: 12 }
    case "ticket.followUp": {
      const task = ticket.model.task
      // The second call of the step carries the tool result: confirm what was scheduled.
      if (request.rawBody.includes("TASK-") || task === undefined) {
        return {
          _tag: "Success",
          latencyMs,
          usage,
          text: task === undefined ? "No follow-up needed." : `Scheduled: "${task.title}" in ${task.dueInDays} days.`
        }
      }
      return {
        _tag: "Success",
        latencyMs,
        usage,
        toolCalls: [
          {
            id: `call_${ticket.id}`,
            name: "create_follow_up_task",
            arguments: { ticketId: ticket.id, title: task.title, dueInDays: task.dueInDays }
          }
        ]
      }
    }
    default:
      return { _tag: "Success", latencyMs, usage }
  }
}

/**
 * The mock server's handler for a scenario: the scenario's fault if any, else the scripted answer.
 *
 * One fault belongs to the story of `ticket.followUp` and happens in every scenario: the first
 * confirmation call of each follow-up step (the one after the tool ran) hangs for 1.5 s, longer
 * than the attempt timeout, so the agent must retry the step without creating a second task.
 */
export const makeHandler = (scenario: Scenario, scale = 1): Mock.Handler => {
  const hung = new Set<string>()
  const scaled = (b: Mock.Behavior): Mock.Behavior => {
    const latencyMs = b.latencyMs !== undefined ? b.latencyMs * scale : undefined
    if (b._tag !== "Success") return { ...b, latencyMs }
    return { ...b, latencyMs, ttftMs: b.ttftMs !== undefined ? b.ttftMs * scale : undefined }
  }
  return (request) => {
    const ticket = ticketIn(request.rawBody)
    const workflow = workflowIn(request.rawBody)
    if (ticket === undefined || workflow === undefined) return undefined
    const fault = scenario.fault(request, workflow)
    const base = answer(request, ticket, workflow)
    if (fault !== undefined) {
      // A fault of `Success` shape only changes the timing of the scripted answer.
      return scaled(
        fault._tag === "Success" && base._tag === "Success" ? { ...base, ...fault, _tag: "Success" } : fault
      )
    }
    if (workflow === prompts.followUp.id && request.rawBody.includes("TASK-") && !hung.has(ticket.id)) {
      hung.add(ticket.id)
      return { ...base, latencyMs: 1500 * scale }
    }
    return base
  }
}
