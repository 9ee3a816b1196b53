/**
 * The demo, run in `--json` mode for every scenario (through `runDemo`, the program `pnpm demo`
 * runs), with assertions on the CallRecords it prints. Real adapters, real HTTP, the in-process mock
 * provider server: real time, no network.
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { assert, describe, it } from "@effect/vitest"
import { CallRecord } from "@modelgate/core/ModelResult"
import { Effect, Schema } from "effect"
import { parse } from "../support-ticket/cli.js"
import { refs } from "../support-ticket/gateway.js"
import { type DemoReport, runDemo } from "../support-ticket/program.js"
import * as Render from "../support-ticket/render.js"
import { type ScenarioName, scenarioNames } from "../support-ticket/scenarios.js"
import { tickets } from "../support-ticket/tickets.js"

const decodeRecord = Schema.decodeUnknownSync(CallRecord)

/**
 * Deadlines and scripted delays ×1.5, so that a busy CI machine does not turn a 25 ms mock answer
 * into a timeout; the ratios the scenarios rely on (TTFT 900 vs 300 ms, hang 1.5 s vs 500 ms) stay.
 */
const scale = 1.5

/** Runs one scenario in JSON mode; returns the CallRecords decoded from its output lines. */
const run = (scenario: ScenarioName) =>
  Effect.gen(function* () {
    let out = ""
    const report = yield* runDemo({
      scenario,
      json: true,
      style: Render.plain,
      write: (s) => {
        out += s
      },
      scale
    })
    const lines = out.split("\n").filter((l) => l.length > 0)
    const records = lines.map((l) => decodeRecord(JSON.parse(l)))
    // The JSON output is exactly the records, one per logical call, in order.
    assert.strictEqual(records.length, report.records.length)
    assert.deepStrictEqual(
      records.map((r) => r.evidence.callId),
      report.records.map((r) => r.evidence.callId)
    )
    return { records, report }
  })

/** A test of `scenario` under `--json`: `check` reads its records and report (it runs for real: 30 s). */
const scenarioTest = (
  name: string,
  scenario: ScenarioName,
  check: (demo: { readonly records: ReadonlyArray<CallRecord>; readonly report: DemoReport }) => void
) => it.live(name, () => Effect.map(run(scenario), check), 30_000)

const isOpenAi = (target: string) => target.startsWith("model://openai/")
const isUs = (target: string) => target.endsWith("@us")
const byWorkflow = (records: ReadonlyArray<CallRecord>, workflow: string) =>
  records.filter((r) => r.evidence.workflow === workflow)
const globexTickets = tickets.filter((t) => t.tenant.id === "globex").map((t) => t.id)

/** Every follow-up ticket gets exactly one task, whatever happened to the model calls around it. */
const assertOneTaskPerFollowUp = (report: DemoReport, expected: ReadonlyArray<string>) => {
  assert.deepStrictEqual(
    report.tasks.map((t) => t.ticketId),
    expected
  )
}

describe("demo --json", () => {
  scenarioTest(
    "normal: every call answered; the EU-only tenant never routed to the US; the tool runs once per follow-up",
    "normal",
    ({ records, report }) => {
      for (const workflow of ["ticket.classify", "ticket.extract", "ticket.draftReply"]) {
        const calls = byWorkflow(records, workflow)
        assert.strictEqual(calls.length, tickets.length, workflow)
        for (const r of calls) assert.strictEqual(r.outcome, "success", `${workflow} ${r.evidence.callId}`)
      }
      // Structured outputs were validated against their schemas.
      for (const r of [...byWorkflow(records, "ticket.classify"), ...byWorkflow(records, "ticket.extract")]) {
        assert.isTrue(r.evidence.schemaValid)
      }
      for (const r of records.filter((r) => r.tenant === "globex")) {
        assert.isFalse(r.evidence.eligible.some(isUs))
        assert.isFalse(r.evidence.attempts.some((a) => isUs(a.target)))
      }
      // The draft of a globex ticket shows the US target excluded, with its reason.
      const globexDraft = byWorkflow(records, "ticket.draftReply").find((r) => r.tenant === "globex")
      assert.deepStrictEqual(
        globexDraft?.evidence.excluded.map((x) => [x.target, x.reason]),
        [[refs.pro, "DATA_REGION_MISMATCH"]]
      )
      // The confirmation call after the tool hangs once per follow-up: AmbiguousOutcome (never
      // retried by the gateway since the command offers a side-effecting tool), the agent retries
      // the step, the ledger replays the task: one task per follow-up ticket.
      const followUps = byWorkflow(records, "ticket.followUp")
      const ambiguous = followUps.filter((r) => r.errorTag === "AmbiguousOutcome")
      assert.strictEqual(ambiguous.length, 2)
      for (const r of ambiguous) {
        assert.strictEqual(r.evidence.attempts.length, 1)
        assert.strictEqual(r.evidence.attempts[0]?.outcome, "timeout")
        assert.isTrue(r.evidence.attempts[0]?.possiblyProcessed)
      }
      assert.strictEqual(followUps.filter((r) => r.outcome === "success").length, 6)
      assertOneTaskPerFollowUp(report, ["T-1003", "T-1004"])
      // The warm-up calls before the first timed one leave no record behind.
      assert.deepStrictEqual([...new Set(records.map((r) => r.tenant))].sort(), ["acme", "globex"])
    }
  )

  scenarioTest(
    "outage: every call whose primary is an OpenAI target falls back to another provider",
    "outage",
    ({ records, report }) => {
      const affected = records.filter((r) => isOpenAi(r.evidence.attempts[0]?.target ?? ""))
      // classify and draftReply for each ticket
      assert.strictEqual(affected.length, 2 * tickets.length)
      for (const r of affected) {
        assert.strictEqual(r.outcome, "success", r.evidence.callId)
        assert.isTrue(r.evidence.fallbackUsed)
        assert.isFalse(isOpenAi(r.evidence.target ?? ""))
        const onOpenAi = r.evidence.attempts.filter((a) => isOpenAi(a.target))
        for (const a of onOpenAi) {
          assert.strictEqual(a.outcome, "unavailable")
          assert.strictEqual(a.httpStatus, 503)
        }
        // classify's small model has maxAttempts 2 (one retry); the draft's large one maxAttempts 1.
        assert.strictEqual(onOpenAi.length, r.evidence.workflow === "ticket.classify" ? 2 : 1, r.evidence.callId)
        assert.strictEqual(r.evidence.retryCount, r.evidence.workflow === "ticket.classify" ? 1 : 0)
      }
      // The unaffected workflows never saw OpenAI and needed no fallback.
      for (const r of records.filter((r) => !affected.includes(r) && r.outcome === "success")) {
        assert.isFalse(r.evidence.fallbackUsed)
      }
      assert.isTrue(report.requests.some((q) => q.provider === "openai"))
    }
  )

  scenarioTest(
    "rate-limit: a retry-after longer than the deadline is not slept on: immediate fallback",
    "rate-limit",
    ({ records }) => {
      const affected = records.filter((r) => isOpenAi(r.evidence.attempts[0]?.target ?? ""))
      assert.strictEqual(affected.length, 2 * tickets.length)
      for (const r of affected) {
        const [first, second, ...rest] = r.evidence.attempts
        assert.strictEqual(first?.outcome, "rate_limited")
        assert.strictEqual(first?.retryAfterMs, 30_000)
        // No second attempt on the rate-limited target, no sleep before the fallback.
        assert.isFalse(isOpenAi(second?.target ?? "model://openai/"))
        assert.strictEqual(second?.outcome, "success")
        assert.strictEqual(rest.length, 0)
        assert.strictEqual(r.evidence.retryCount, 0)
        assert.isTrue(r.evidence.fallbackUsed)
        const gap = (second?.startOffsetMs ?? 0) - ((first?.startOffsetMs ?? 0) + (first?.latencyMs ?? 0))
        assert.isBelow(gap, 1_000)
        assert.isBelow(r.evidence.totalLatencyMs, 3_000 * scale)
      }
    }
  )

  scenarioTest(
    "slow: the streamed draft exceeds its time to first token on the primary and falls back",
    "slow",
    ({ records }) => {
      const drafts = byWorkflow(records, "ticket.draftReply")
      assert.strictEqual(drafts.length, tickets.length)
      for (const r of drafts) {
        assert.strictEqual(r.mode, "stream")
        assert.strictEqual(r.outcome, "success")
        assert.isTrue(r.evidence.fallbackUsed)
        const [first, second] = r.evidence.attempts
        assert.strictEqual<string | undefined>(first?.target, refs.gpt)
        assert.strictEqual(first?.outcome, "timeout")
        // Cut at the 300 ms TTFT limit (scaled), well before the 900 ms first token and the
        // attempt's own 2 s bound.
        assert.isAtLeast(first?.latencyMs ?? 0, 300 * scale)
        assert.isBelow(first?.latencyMs ?? Infinity, 900 * scale)
        assert.isBelow(first?.latencyMs ?? Infinity, first?.timeoutMs ?? 0)
        assert.strictEqual<string | undefined>(second?.target, refs.sonnet)
        assert.strictEqual(second?.outcome, "success")
      }
    }
  )

  scenarioTest(
    "budget: a cheaper target when the expensive ones do not fit; once none fits, the degraded answer or BudgetExceeded before any traffic",
    "budget",
    ({ records, report }) => {
      const acme = records.filter((r) => r.tenant === "acme")
      // Out of budget: BudgetExceeded, or (a workflow with `degrade`) its degraded answer, each
      // with every target excluded by the budget and nothing sent.
      const outOfBudget = (r: (typeof acme)[number]) =>
        r.errorTag === "BudgetExceeded" ||
        (r.evidence.degraded &&
          r.evidence.attempts.length === 0 &&
          r.evidence.excluded.some((x) => x.reason === "BUDGET_DOES_NOT_FIT"))
      const firstRefused = acme.findIndex(outOfBudget)
      assert.isAbove(firstRefused, 0, "acme's budget runs out mid-run, after some calls succeeded")
      for (const r of acme.slice(0, firstRefused)) assert.isFalse(outOfBudget(r))
      const refused = acme[firstRefused]!
      assert.include(["failed", "degraded"], refused.outcome)
      assert.strictEqual(refused.evidence.attempts.length, 0)
      assert.strictEqual(refused.evidence.cost.actual, 0)
      // The call before it succeeded: the budget ran out between them.
      assert.strictEqual(acme[firstRefused - 1]?.outcome, "success")
      // Spend stays within the limit; the other tenant is not affected.
      const balance = report.balances.find((b) => b.tenant === "acme")
      assert.isAtMost((balance?.committed ?? Infinity) + (balance?.reserved ?? 0), 0.004)
      // Budget-aware choice (issue 14): before running out, a call whose expensive targets did not
      // fit what was left excluded them and was served by a cheaper one.
      const cheaper = acme
        .slice(0, firstRefused)
        .find((r) => r.evidence.excluded.some((x) => x.reason === "BUDGET_DOES_NOT_FIT"))
      assert.strictEqual(cheaper?.outcome, "success")
      assert.isFalse(records.some((r) => r.tenant === "globex" && r.errorTag === "BudgetExceeded"))
      // Every refused call sent nothing to any provider.
      const sent = report.requests.length
      const attempts = records.reduce((n, r) => n + r.evidence.attempts.length, 0)
      assert.strictEqual(sent, attempts)
    }
  )

  scenarioTest(
    "residency: with the EU providers down the EU-only tenant is never sent to a US target",
    "residency",
    ({ records, report }) => {
      const globex = records.filter((r) => r.tenant === "globex")
      assert.isAbove(globex.length, 0)
      for (const r of globex) {
        assert.isFalse(
          r.evidence.attempts.some((a) => isUs(a.target)),
          r.evidence.callId
        )
        assert.notStrictEqual(r.outcome, "success")
      }
      // Not one request about a globex ticket reached the (US) Gemini endpoints.
      for (const q of report.requests.filter((q) => q.provider === "gemini")) {
        assert.isFalse(
          globexTickets.some((id) => q.rawBody.includes(`Ticket ${id}`)),
          "a globex ticket was sent to a US target"
        )
      }
      // Without a degraded mode the call is refused, naming the excluded US target and why.
      const refused = globex.filter((r) => r.errorTag === "PolicyViolation")
      assert.isAbove(refused.length, 0)
      for (const r of refused) {
        assert.strictEqual(r.evidence.workflow, "ticket.followUp")
        assert.strictEqual(r.errorReason, "DATA_REGION_MISMATCH")
        assert.deepStrictEqual(
          r.evidence.excluded.map((x) => [x.target, x.reason]),
          [[refs.flash, "DATA_REGION_MISMATCH"]]
        )
      }
      // With one, a non-model answer: still nothing sent to the US.
      assert.isTrue(globex.some((r) => r.outcome === "degraded"))
      // The confidential, EU-only extract workflow has no US route for anyone.
      for (const r of byWorkflow(records, "ticket.extract")) assert.strictEqual(r.outcome, "degraded")
      // acme, without the EU-only contract, is served from the US.
      assert.isTrue(
        records.some((r) => r.tenant === "acme" && r.outcome === "success" && isUs(r.evidence.target ?? ""))
      )
      assertOneTaskPerFollowUp(report, ["T-1003"])
    }
  )
})

describe("demo report", () => {
  it.live(
    "plain text when not a TTY: timeline, summary, no escape codes",
    () =>
      Effect.gen(function* () {
        let out = ""
        yield* runDemo({
          scenario: "rate-limit",
          json: false,
          style: Render.plain,
          write: (s) => {
            out += s
          },
          scale
        })
        assert.notInclude(out, "\u001b[")
        assert.include(out, "modelgate demo · scenario rate-limit")
        assert.match(out, /openai\/gpt-4\.1-mini@eu #1 +·*█+·* +\d+ → +\d+ ms {2}429 rate limited, retry-after 30 s/)
        assert.include(out, "excluded  gemini/gemini-2.5-flash@us  DATA_REGION_MISMATCH")
        assert.match(out, /ticket\.classify +4 +4 +4 +0 +0 +0 +\$/)
        assert.include(out, "follow-up tasks created in the ticket system: 2")
        // The streamed draft: its heading, then its text as it arrived, then its record.
        const drafts = out.split("\n  ticket.draftReply (streamed)\n").slice(1)
        assert.strictEqual(drafts.length, tickets.length)
        for (const draft of drafts) {
          assert.match(draft, /^ {4}reply {5}Hi \S[^\n]*\n(?: {14}[^\n]*\n)* {4}call {6}success · fallback {2}mg_/)
        }
        // Every amount with the same precision.
        const amounts = out.match(/\$[\d.]+/g) ?? []
        assert.isAbove(amounts.length, 40)
        for (const amount of amounts) assert.match(amount, /^\$\d+\.\d{6}$/)
      }),
    30_000
  )

  it.live(
    "the program's stdout with --json is CallRecord lines only (what `pnpm -s demo --json | jq` reads)",
    () =>
      Effect.gen(function* () {
        // `--import tsx` in this process (not tsx's CLI, which starts a second Node without
        // `--conditions=source` and would resolve the packages to their unbuilt `dist/`).
        const { stdout } = yield* Effect.promise(() =>
          promisify(execFile)(
            process.execPath,
            ["--conditions=source", "--import", "tsx", "support-ticket/main.ts", "--json", "--scenario", "residency"],
            {
              cwd: fileURLToPath(new URL("..", import.meta.url)),
              env: { ...process.env, NO_COLOR: "1" }
            }
          )
        )
        const lines = stdout.split("\n")
        assert.strictEqual(lines.pop(), "", "ends with a newline")
        assert.isAbove(lines.length, 10)
        for (const line of lines) assert.doesNotThrow(() => decodeRecord(JSON.parse(line)), undefined, line)
      }),
    60_000
  )

  it("colors only on a TTY without NO_COLOR", () => {
    assert.strictEqual(Render.styleFor({ isTTY: true }, {}), Render.colors)
    assert.strictEqual(Render.styleFor({ isTTY: true }, { NO_COLOR: "1" }), Render.plain)
    assert.strictEqual(Render.styleFor({ isTTY: false }, {}), Render.plain)
    assert.strictEqual(Render.styleFor({}, {}), Render.plain)
  })

  it("flags", () => {
    assert.deepStrictEqual(parse([]), { scenarios: ["normal"], json: false, live: false })
    assert.deepStrictEqual(parse(["--", "--scenario", "outage", "--json"]), {
      scenarios: ["outage"],
      json: true,
      live: false
    })
    assert.deepStrictEqual(parse(["--scenario=budget"]), { scenarios: ["budget"], json: false, live: false })
    const all = parse(["--scenario", "all"])
    // every scenario, in the order the demo declares them
    assert.deepStrictEqual(typeof all === "string" ? [] : all.scenarios, scenarioNames)
    assert.include(String(parse(["--scenario", "nope"])), "unknown scenario")
    assert.include(String(parse(["--frobnicate"])), "unknown argument")
  })
})
