/**
 * The support-ticket assistant: four workflows over real adapters and real HTTP, against the
 * in-process mock provider server (or real providers, see `main.ts`), under one scenario.
 *
 * `runDemo` is the whole program as one Effect: `main.ts` runs it for the terminal, the tests run it
 * in JSON mode and read its CallRecords.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import * as OpenAiCompatible from "@modelgate/adapters/openai-compatible"
import * as Budgets from "@modelgate/core/Budgets"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import type { GatewayError } from "@modelgate/core/Errors"
import * as Health from "@modelgate/core/Health"
import { ModelCommand, TenantId } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { CallRecord, type ModelResult } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import * as ToolLedger from "@modelgate/core/ToolLedger"
import * as Mock from "@modelgate/testing/MockProviderServer"
import type { HttpClient } from "@effect/platform"
import { Cause, Config, Duration, Effect, Exit, Layer, Option, Schema, Stream } from "effect"
import { type FollowUpEvent, makeTaskSystem, noteOf, runFollowUp, type Task } from "./followUp.js"
import { Classification, code, configJson, prompts, providerIds, systemPrompt, TicketFields } from "./gateway.js"
import { runCanary } from "./canary.js"
import { runScored } from "./scored.js"
import * as Render from "./render.js"
import { makeHandler, type ScenarioName, scenarios } from "./scenarios.js"
import { type Ticket, ticketText, tickets } from "./tickets.js"

export interface DemoOptions {
  readonly scenario: ScenarioName
  /** Print CallRecords as JSON lines instead of the readable report. */
  readonly json: boolean
  readonly style: Render.Style
  /** Writes text to the output as is (the caller adds no newline). */
  readonly write: (text: string) => void
  /**
   * Providers to call for real, by provider id (keys from the environment, see `main.ts`). The
   * others are served by the mock server. Default: none.
   */
  readonly live?: ReadonlyArray<"openai" | "anthropic" | "gemini"> | undefined
  /**
   * Multiplies every deadline and timeout of the config and every scripted delay of the scenario
   * (default 1; 10 when any provider is live). Tests on a busy machine may raise it.
   */
  readonly scale?: number | undefined
  /** Terminal width for wrapping the streamed reply. Default 100. */
  readonly columns?: number | undefined
}

export interface TicketOutcome {
  readonly ticket: string
  readonly tenant: string
  readonly workflow: string
  readonly callId: string | undefined
  readonly outcome: "success" | "degraded" | "failed"
  readonly errorTag: string | undefined
}

export interface DemoReport {
  readonly scenario: ScenarioName
  readonly records: ReadonlyArray<CallRecord>
  readonly tasks: ReadonlyArray<Task>
  /** What the mock server received (empty for providers called for real). */
  readonly requests: ReadonlyArray<Mock.RecordedRequest>
  readonly balances: ReadonlyArray<Budgets.Balance>
}

const encodeRecord = Schema.encodeSync(CallRecord)
/** The tenant of the warm-up calls (never printed, never in the report). */
const warmUpTenant = "demo-warm-up"
/** The fold's start: no envelope yet. */
const noResult = (): ModelResult | undefined => undefined
const isClassification = Schema.is(Classification)
const isFields = Schema.is(TicketFields)
const decodeCommand = Schema.decodeSync(ModelCommand)

/** Every provider the config names, over the mock server unless called for real. */
const adaptersLayer = (
  mock: Mock.Service,
  live: ReadonlySet<string>
): Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> => {
  const liveOr = <E>(
    provider: string,
    real: Layer.Layer<ProviderAdapter.ProviderAdapter, E, HttpClient.HttpClient>,
    fake: Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient>
  ) => (live.has(provider) ? Layer.orDie(real) : fake)
  return Layer.mergeAll(
    liveOr("openai", OpenAi.layerConfig(), OpenAi.layer({ baseUrl: mock.baseUrl("openai") })),
    liveOr("anthropic", Anthropic.layerConfig(), Anthropic.layer({ baseUrl: mock.baseUrl("anthropic") })),
    liveOr("gemini", Gemini.layerConfig(), Gemini.layer({ baseUrl: mock.baseUrl("gemini") })),
    // The EU vLLM server: `VLLM_EU_BASE_URL` when set (and live), the mock otherwise.
    live.size > 0
      ? Layer.unwrapEffect(
          Effect.map(Config.option(Config.string("VLLM_EU_BASE_URL")).pipe(Effect.orDie), (url) =>
            OpenAiCompatible.layer({
              id: "vllm-eu",
              baseUrl: Option.getOrElse(url, () => mock.baseUrl("openai-compatible"))
            })
          )
        )
      : OpenAiCompatible.layer({ id: "vllm-eu", baseUrl: mock.baseUrl("openai-compatible") })
  )
}

/** Indents continuation lines of a labelled block. */
const block = (label: string, lines: ReadonlyArray<string>, style: Render.Style): string =>
  lines.map((l, i) => `    ${i === 0 ? style.dim(label.padEnd(9)) : " ".repeat(9)} ${l}`).join("\n")

/** Writes streamed text wrapped at `columns`, continuation lines indented. */
const wrapper = (write: (s: string) => void, indent: number, columns: number) => {
  let col = indent
  return (text: string) => {
    for (const word of text.split(/(\s+)/)) {
      if (word.length === 0) continue
      if (/^\s+$/.test(word)) {
        if (col + 1 >= columns) {
          write(`\n${" ".repeat(indent)}`)
          col = indent
        } else {
          write(" ")
          col++
        }
      } else {
        write(word)
        col += word.length
      }
    }
  }
}

/**
 * Runs the demo under one scenario. Starts the mock provider server in this scope (stopped when
 * the program ends), builds the gateway (startup validation included), processes the tickets.
 */
export const runDemo = (options: DemoOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { style, write } = options
      const scenario = scenarios[options.scenario]
      const live = new Set<string>(options.live ?? [])
      const scale = options.scale ?? (live.size > 0 ? 10 : 1)
      const line = (s = "") => (options.json ? undefined : write(`${s}\n`))

      const mock = yield* Mock.make()

      const budgetsLayer = Budgets.layerMemory({
        tenants: {
          ...Object.fromEntries(
            Object.entries(scenario.budgets).map(([tenant, limit]) => [tenant, { limit, period: "daily" as const }])
          ),
          // The warm-up calls' own tenant: a limited budget, so they take the path the tickets take.
          [warmUpTenant]: { limit: 1, period: "daily" }
        },
        undeclaredTenants: "unlimited"
      })
      const services = Layer.mergeAll(
        budgetsLayer,
        Concurrency.layerOff,
        Health.layerOff,
        CallRecorder.layerMemory,
        ToolLedger.layerMemory
      )
      const gatewayLayer = ModelGateway.layerJson(configJson(scale), code).pipe(
        Layer.provideMerge(adaptersLayer(mock, live).pipe(Layer.provide(NodeHttpClient.layerUndici))),
        Layer.provideMerge(services)
      )

      const program = Effect.gen(function* () {
        const gateway = yield* ModelGateway.ModelGateway
        const recorder = yield* CallRecorder.MemoryRecorder
        const tasks = yield* makeTaskSystem
        let seen = 0

        /** The records produced since the last call (one per logical call). */
        const newRecords = Effect.map(recorder.records, (all) => {
          const fresh = all.slice(seen)
          seen = all.length
          return fresh
        })

        /** The first line of a call: workflow and label (a streamed call prints it before its text). */
        const heading = (workflow: string, label: string) =>
          `  ${style.bold(style.cyan(workflow))}${label ? style.dim(` (${label})`) : ""}`

        const printCall = (
          record: CallRecord,
          exit: Exit.Exit<ModelResult, GatewayError>,
          label: string,
          content: (result: ModelResult) => string | undefined,
          headed = false
        ) => {
          if (options.json) return write(`${JSON.stringify(encodeRecord(record))}\n`)
          const e = record.evidence
          const tags = [
            record.outcome === "success"
              ? style.green("success")
              : record.outcome === "degraded"
                ? style.yellow("degraded")
                : style.red(record.outcome),
            e.fallbackUsed ? style.yellow("fallback") : undefined,
            e.retryCount > 0 ? style.yellow(`${e.retryCount} ${e.retryCount === 1 ? "retry" : "retries"}`) : undefined
          ].filter((t) => t !== undefined)
          const status = `${tags.join(style.dim(" · "))}  ${style.dim(e.callId)}`
          line(headed ? block("call", [status], style) : `${heading(e.workflow, label)}  ${status}`)
          if (e.eligible.length > 0 || e.excluded.length > 0)
            line(block("decision", Render.decision(record, style), style))
          if (e.attempts.length > 0) line(block("timeline", Render.timeline(record, style), style))
          const outcome = Exit.match(exit, {
            onSuccess: (result) => {
              const text = content(result)
              const mark =
                record.outcome === "degraded" ? style.yellow("◐ degraded, no model answered:") : style.green("✓")
              return `${mark} ${text ?? ""}`
            },
            onFailure: (cause) =>
              Option.match(Cause.failureOption(cause), {
                onNone: () => style.red(`✗ ${Cause.pretty(cause)}`),
                onSome: (error) => style.red(`✗ ${error._tag}: ${error.message}`)
              })
          })
          line(block("outcome", [outcome], style))
          line(block("usage", [Render.usage(record)], style))
          line(block("versions", [style.dim(Render.versions(record))], style))
          line()
        }

        /** One generate call, printed with its record. */
        const call = (command: ModelCommand, label: string, content: (r: ModelResult) => string | undefined) =>
          Effect.gen(function* () {
            const exit = yield* Effect.exit(gateway.generate(command))
            for (const record of yield* newRecords) printCall(record, exit, label, content)
            return exit
          })

        const commandFor = (
          ticket: Ticket,
          workflow: string,
          prompt: { readonly id: string; readonly version: string },
          tenant: string = ticket.tenant.id
        ) =>
          decodeCommand({
            workflow,
            tenant,
            messages: [
              { _tag: "system", content: systemPrompt(prompt) },
              { _tag: "user", content: ticketText(ticket) }
            ],
            ...("regions" in ticket.tenant ? { regions: ticket.tenant.regions } : {})
          })

        // Warm-up, so that the first timed call does not pay for loading the tokenizer and compiling
        // the gateway, HTTP and SSE code (in a fresh process the first call's first attempt started
        // up to ~100 ms late): route one command of each workflow, send one plain and one streamed
        // request to each mocked provider, then run one whole call of each ticket workflow (as the
        // warm-up tenant, answered as in the normal scenario). Their records and requests are
        // dropped; then the scenario begins.
        const first = tickets[0]!
        yield* Effect.forEach(
          [
            commandFor(first, "ticket.classify", prompts.classify),
            commandFor(first, "ticket.extract", prompts.extract),
            commandFor(first, "ticket.draftReply", prompts.draftReply)
          ],
          (c) => Effect.ignore(gateway.router.resolve(c))
        )
        const targets = [...gateway.router.workflows.values()].flatMap((w) => w.targets)
        yield* Effect.forEach(
          providerIds.filter((p) => !live.has(p)),
          (provider) =>
            Effect.gen(function* () {
              const adapter = yield* ProviderAdapter.find(provider)
              const target = targets.find((t) => t.provider === provider)
              if (adapter._tag === "None" || target === undefined) return
              const request: ProviderAdapter.ProviderRequest = {
                target,
                messages: [{ _tag: "user", content: "warm-up" }],
                tools: [],
                toolChoice: undefined,
                output: undefined,
                maxOutputTokens: 16,
                timeout: Duration.seconds(5)
              }
              yield* Effect.ignore(adapter.value.generate(request))
              yield* Effect.ignore(Stream.runDrain(adapter.value.stream(request)))
            }),
          { concurrency: "unbounded" }
        )
        if (live.size === 0) {
          yield* mock.setHandler(makeHandler(scenarios.normal, scale))
          yield* Effect.all(
            [
              Effect.exit(gateway.generate(commandFor(first, "ticket.classify", prompts.classify, warmUpTenant))),
              Effect.exit(gateway.generate(commandFor(first, "ticket.extract", prompts.extract, warmUpTenant))),
              Effect.exit(
                Stream.runDrain(
                  gateway.stream(commandFor(first, "ticket.draftReply", prompts.draftReply, warmUpTenant))
                )
              )
            ],
            { concurrency: "unbounded" }
          )
          yield* recorder.clear
        }
        yield* mock.reset
        yield* mock.setHandler(makeHandler(scenario, scale))

        line(style.bold(`modelgate demo · scenario ${scenario.name}`))
        line(`${style.dim("setup  ")} ${scenario.setup}`)
        line(`${style.dim("shows  ")} ${scenario.shows}`)
        line(
          style.dim(
            `mock providers on ${mock.url} (OpenAI, Anthropic, Gemini and OpenAI-compatible wire formats)${live.size > 0 ? `; live: ${[...live].join(", ")}` : ""}`
          )
        )
        line()

        for (const ticket of tickets) {
          const eu = "regions" in ticket.tenant ? style.magenta(" EU-only") : ""
          line(style.bold(`━━ ${ticket.id} · ${ticket.tenant.id}${eu} · "${ticket.subject}"`))

          yield* call(commandFor(ticket, "ticket.classify", prompts.classify), "", (r) => {
            const v = r.content.value
            return isClassification(v) ? `${style.bold(v.category)} (confidence ${v.confidence})` : undefined
          })

          yield* call(commandFor(ticket, "ticket.extract", prompts.extract), "", (r) => {
            const v = r.content.value
            if (!isFields(v)) return undefined
            if (v.needsManualEntry) return "fields left empty, flagged for manual entry"
            return `order ${v.orderId ?? "—"} · product ${v.product ?? "—"}`
          })

          // ticket.draftReply is streamed: the text is printed as it arrives, under the call's heading.
          line(heading("ticket.draftReply", "streamed"))
          const prefix = `    ${style.dim("reply".padEnd(9))} `
          let streamed = false
          const wrap = wrapper(write, 14, options.columns ?? 100)
          const draft = yield* gateway.stream(commandFor(ticket, "ticket.draftReply", prompts.draftReply)).pipe(
            Stream.runFoldEffect(noResult(), (acc, event) =>
              Effect.sync(() => {
                if (event._tag === "TextDelta") {
                  if (!options.json) {
                    if (!streamed) write(prefix)
                    wrap(event.text)
                  }
                  streamed = true
                } else if (event._tag === "Final") {
                  return event.result
                }
                return acc
              })
            ),
            Effect.flatMap((result) =>
              result === undefined ? Effect.dieMessage("stream ended without Final") : Effect.succeed(result)
            ),
            Effect.exit
          )
          if (streamed) line()
          for (const record of yield* newRecords) {
            printCall(
              record,
              draft,
              "streamed",
              (r) => (streamed ? style.dim(`${r.content.text?.length ?? 0} characters streamed`) : r.content.text),
              true
            )
          }

          if (ticket.followUp) {
            // The agent step is a run of its own: a deadline and a budget every model step inherits.
            const run = { deadlineMs: 6000 * scale, budget: 0.004 }
            const tone = { ok: style.green, warn: style.yellow, error: style.red, info: style.dim }
            const onEvent = (event: FollowUpEvent) =>
              Effect.sync(() => {
                const note = noteOf(event, run)
                if (note === undefined) return
                const [first = "", ...rest] = note.lines
                line(`${block(note.label, [tone[note.tone](first), ...rest.map(style.dim)], style)}\n`)
              })
            yield* Effect.either(
              runFollowUp({
                ticket,
                runId: `run-${ticket.id}`,
                tasks,
                ...run,
                onEvent,
                generate: (command, label) =>
                  Effect.flatMap(
                    call(command, label, (r) =>
                      r.content.toolCalls.length > 0
                        ? `model calls ${r.content.toolCalls.map((c) => style.bold(c.name)).join(", ")}`
                        : r.content.text
                    ),
                    (exit) => exit
                  )
              })
            )
          }
        }

        const records = yield* recorder.records
        const budgets = yield* Budgets.Budgets
        const balances = yield* Effect.forEach(Object.keys(scenario.budgets), (t) => budgets.balance(TenantId.make(t)))
        const created = yield* tasks.created

        if (!options.json) {
          line(style.bold("━━ summary"))
          for (const l of Render.summaryTable(records, style)) line(`  ${l}`)
          line()
          for (const b of balances) {
            line(
              `  budget ${style.bold(b.tenant)}: committed ${Render.usd(b.committed)} of ${Render.usd(b.limit)} ${b.period ?? ""}${b.reserved > 0 ? `, reserved ${Render.usd(b.reserved)}` : ""}`
            )
          }
          line(
            `  follow-up tasks created in the ticket system: ${created.length}${created.length > 0 ? ` (${created.map((t) => `${t.id} for ${t.ticketId}`).join(", ")})` : ""}`
          )
          line()
        }
        return { records, tasks: created, balances }
      })

      const result = yield* Effect.provide(program, gatewayLayer)
      const requests = yield* mock.requests
      return { scenario: options.scenario, ...result, requests } satisfies DemoReport
    })
  )

/** Runs every scenario in turn (`canary` and `scored` are programs of their own on virtual time). */
export const runAll = (options: Omit<DemoOptions, "scenario">, names: ReadonlyArray<ScenarioName>) =>
  Effect.forEach(names, (scenario) =>
    scenario === "canary"
      ? runCanary(options)
      : scenario === "scored"
        ? runScored(options)
        : runDemo({ ...options, scenario })
  )
