/**
 * One gateway process of the multi-replica proof: its own `ModelGateway` over the Redis stores
 * (budgets, permits, breakers, tool ledger) of one `redis-server`, with scripted providers
 * (random latency, random failures that report usage). Driven by the parent over IPC, one phase
 * at a time; answers each phase with what it measured.
 */
import * as Redis from "@modelgate/adapters/redis"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway, ToolLedger } from "@modelgate/core"
import * as BreakerStore from "@modelgate/core/BreakerStore"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { Usage } from "@modelgate/core/ModelResult"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import * as PermitStore from "@modelgate/core/PermitStore"
import * as TokenEstimator from "@modelgate/core/TokenEstimator"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import * as ToolLedgerStore from "@modelgate/core/ToolLedgerStore"
import { Workflow } from "@modelgate/core/Workflow"
import { Context, Duration, Effect, Exit, FiberRef, Layer, ManagedRuntime, Schema, Stream } from "effect"
import type { Redis as IORedis } from "ioredis"
import * as Plan from "./plan.js"

const index = Number(process.env.MR_INDEX ?? "0")
const url = process.env.MR_REDIS_URL ?? ""

// ---------------------------------------------------------------------------------------------
// Providers: alpha (random latency, some failures with usage), beta (random latency), gamma (down)
// ---------------------------------------------------------------------------------------------

/** Reservations the current call holds (set by the budget store wrapper, read by the providers). */
const reservationsHeld = FiberRef.unsafeMake(0)
const counters = { providerCalls: 0, withoutReservation: 0 }

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1))

/**
 * The input tokens a provider reports: the gateway's own estimate of the request, so that no call
 * spends more than it reserved (a budget commits all that is spent, also beyond the reservation,
 * and this proof checks that the limit holds).
 */
const inputTokensOf = (request: ProviderAdapter.ProviderRequest) =>
  TokenEstimator.estimateInput({ messages: request.messages, tools: request.tools })

const answer = (request: ProviderAdapter.ProviderRequest): ProviderAdapter.ProviderResponse => ({
  text: "ok",
  toolCalls: [],
  finishReason: "stop",
  refusal: false,
  usage: new Usage({ inputTokens: inputTokensOf(request), outputTokens: random(10, request.maxOutputTokens ?? 100) }),
  modelVersion: "scripted-1",
  requestId: undefined,
  httpStatus: 200
})

const scripted = (
  behaviour: (
    request: ProviderAdapter.ProviderRequest
  ) => Effect.Effect<ProviderAdapter.ProviderResponse, ProviderError>
): Omit<ProviderAdapter.ProviderAdapter, "provider"> => ({
  generate: (request) =>
    Effect.flatMap(FiberRef.get(reservationsHeld), (held) => {
      counters.providerCalls++
      if (held === 0) counters.withoutReservation++
      return behaviour(request)
    }),
  stream: () => Stream.fail(new ProviderError({ kind: "invalid_request", processed: "no", detail: "no streams here" }))
})

const alpha = scripted((request) =>
  Effect.zipRight(
    Effect.sleep(Duration.millis(random(5, 30))),
    Math.random() < Plan.failureRate
      ? Effect.fail(
          new ProviderError({
            kind: "server_error",
            processed: "maybe",
            httpStatus: 500,
            usage: new Usage({ inputTokens: inputTokensOf(request), outputTokens: random(0, 20) }),
            detail: "scripted failure"
          })
        )
      : Effect.succeed(answer(request))
  )
)
const beta = scripted((request) => Effect.as(Effect.sleep(Duration.millis(random(5, 30))), answer(request)))
const gamma = scripted(() =>
  Effect.zipRight(
    Effect.sleep(Duration.millis(2)),
    Effect.fail(new ProviderError({ kind: "server_error", processed: "no", httpStatus: 503, detail: "down" }))
  )
)

// ---------------------------------------------------------------------------------------------
// Gateway
// ---------------------------------------------------------------------------------------------

const decodeTarget = Schema.decodeSync(ModelTarget)
const decodeWorkflow = Schema.decodeSync(Workflow)

const targetOf = (ref: string, provider: string) =>
  decodeTarget({
    ref,
    provider,
    model: "scripted",
    capabilities: { contextWindow: 128_000, maxOutputTokens: 4096 },
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { inputPerMillion: Plan.inputPerMillion, outputPerMillion: Plan.outputPerMillion, pricingVersion: "mr-1" },
    limits: { maxAttempts: 1, perAttemptTimeout: 10_000, minimumAttemptTime: 50 }
  })

const workflowOf = (name: string, route: readonly [string, ...Array<string>], timeoutMs: number) =>
  decodeWorkflow({
    name,
    policyVersion: "mr-policy-1",
    prompt: { id: `${name}.prompt`, version: "1" },
    route,
    timeout: timeoutMs,
    maxOutputTokens: Plan.maxOutputTokens,
    regions: ["eu"],
    dataClass: "internal"
  })

const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [targetOf(Plan.P, "alpha"), targetOf(Plan.F, "beta"), targetOf(Plan.B, "gamma")],
    workflows: [
      workflowOf("mr.load", [Plan.P, Plan.F], 20_000),
      workflowOf("mr.breaker", [Plan.B, Plan.F], 5_000),
      workflowOf("mr.chaos", [Plan.P, Plan.F], Plan.chaosDeadlineMs)
    ]
  }),
  schemas: {}
}

const command = (workflow: string, i: number) =>
  Schema.decodeSync(ModelCommand)({
    workflow,
    tenant: Plan.tenant,
    messages: [{ _tag: "user", content: `Process ${index}, call ${i}: summarise the ticket.` }]
  })

/** Every reserve checks the account it answers with (after every store operation). */
const checks = { reserves: 0, overLimit: 0 }
const checkedBudgetStore = (inner: BudgetStore.Service): BudgetStore.Service => ({
  reserve: (r) =>
    Effect.tap(inner.reserve(r), (outcome) =>
      Effect.suspend(() => {
        checks.reserves++
        if (outcome.committed + outcome.reserved > r.limit) checks.overLimit++
        return outcome._tag === "Reserved" ? FiberRef.update(reservationsHeld, (n) => n + 1) : Effect.void
      })
    ),
  commit: inner.commit,
  release: inner.release,
  balance: inner.balance
})

let connection: IORedis | undefined
const stores = Layer.scopedContext(
  Effect.map(
    Redis.make({
      url,
      keyPrefix: Plan.prefix,
      commandTimeout: Duration.millis(Plan.commandTimeoutMs),
      connectTimeout: Duration.millis(Plan.commandTimeoutMs)
    }),
    (s) => {
      connection = s.connection
      return Context.make(BudgetStore.BudgetStore, checkedBudgetStore(s.budget)).pipe(
        Context.add(PermitStore.PermitStore, s.permit),
        Context.add(BreakerStore.BreakerStore, s.breaker),
        Context.add(ToolLedgerStore.ToolLedgerStore, s.ledger)
      )
    }
  )
)

const services = Layer.mergeAll(
  Budgets.layer({ tenants: { [Plan.tenant]: { limit: Plan.limit, period: "total" } } }),
  Concurrency.layer({ permits: Plan.permits, tenants: { [Plan.tenant]: { reserved: 4, max: Plan.tenantMax } } }),
  Health.layer(
    Health.HealthConfig.make({
      breaker: Health.BreakerSettings.make({
        consecutiveFailures: Plan.breakerFailures,
        failureRatio: 0,
        coolDown: Duration.minutes(5)
      }),
      targets: {},
      window: Health.WindowSettings.make({}),
      retryBudget: Health.RetryBudgetSettings.make({})
    })
  ),
  ToolLedger.layer,
  CallRecorder.layerMemory,
  ProviderAdapter.layer("alpha", Effect.succeed(alpha)),
  ProviderAdapter.layer("beta", Effect.succeed(beta)),
  ProviderAdapter.layer("gamma", Effect.succeed(gamma))
).pipe(Layer.provideMerge(stores))

const runtime = ManagedRuntime.make(ModelGateway.layer(definition).pipe(Layer.provideMerge(services)))

const errorTagOf = (exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  Exit.isSuccess(exit)
    ? "success"
    : exit.cause._tag === "Fail"
      ? exit.cause.error._tag
      : exit.cause._tag === "Die"
        ? "defect"
        : exit.cause._tag

const countBy = (xs: ReadonlyArray<string>) => {
  const out: Record<string, number> = {}
  for (const x of xs) out[x] = (out[x] ?? 0) + 1
  return out
}

// ---------------------------------------------------------------------------------------------
// Phases
// ---------------------------------------------------------------------------------------------

/** 500 concurrent calls on the one tenant budget; the exact spend of every call. */
const load = Effect.gen(function* () {
  const g = yield* ModelGateway.ModelGateway
  const exits = yield* Effect.forEach(
    Array.from({ length: Plan.callsPerProcess }, (_, i) => i),
    (i) => Effect.exit(g.generate(command("mr.load", i))),
    { concurrency: "unbounded" }
  )
  const records = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
  // What each call's settle commits, in store units: its actual cost (all of it, also beyond its
  // reservation; the providers here report the gateway's own input estimate, so it never is).
  let committedUnits = 0
  let pending = 0
  for (const r of records) {
    const actual = Math.round(r.evidence.cost.actual * Budgets.unitsPerCurrency)
    committedUnits += actual
    if (r.settlement === "pending") pending++
  }
  return {
    calls: exits.length,
    outcomes: countBy(exits.map(errorTagOf)),
    committedUnits,
    pending,
    records: records.length
  }
})

/** Process 1 only: calls to the down target until its breaker opens (shared through Redis). */
const openBreaker = Effect.gen(function* () {
  const g = yield* ModelGateway.ModelGateway
  const health = yield* Health.Health
  for (let i = 0; i < 20; i++) {
    yield* Effect.exit(g.generate(command("mr.breaker", i)))
    const state = yield* Effect.orElseSucceed(
      health.snapshot(Health.routeKey(targetOf(Plan.B, "gamma"))),
      () => undefined
    )
    if (state !== undefined && state._tag === "Some" && state.value.breaker !== "closed")
      return { opened: true, calls: i + 1 }
  }
  return { opened: false, calls: 20 }
})

/** Processes 2–4: the next call skips the target whose breaker process 1 opened. */
const checkBreaker = Effect.gen(function* () {
  const g = yield* ModelGateway.ModelGateway
  const exit = yield* Effect.exit(g.generate(command("mr.breaker", 1_000)))
  if (Exit.isFailure(exit)) return { skipped: false, detail: errorTagOf(exit) }
  const e = exit.value.evidence
  const sentToB = e.attempts.some((a) => a.target === Plan.B)
  const excluded = e.excluded.find((x) => x.target === Plan.B)?.reason
  return { skipped: !sentToB && excluded === "BREAKER_OPEN", detail: excluded ?? "not excluded" }
})

class Receipt extends Schema.Class<Receipt>("Receipt")({ id: Schema.String }) {}
const sendReceipt = ToolLedger.sideEffecting({ name: "send_receipt", result: Receipt })

/** All four processes run one side-effecting tool with the same key at the same time. */
const tool = Effect.gen(function* () {
  const ledger = yield* ToolLedger.ToolLedger
  const key = ToolLedger.key(sendReceipt, { runId: "mr-run-1", step: 1 })
  const redis = connection
  const run = Effect.promise(async () => {
    // The side effect: counted in Redis, so that the parent sees every run of every process.
    await redis?.incr(`${Plan.prefix}proof:tool-runs`)
    await new Promise((resolve) => setTimeout(resolve, 50))
    return new Receipt({ id: `receipt-from-${index}` })
  })
  const exit = yield* Effect.exit(ledger.runOnce(key, run))
  return { outcome: errorTagOf(exit) }
})

/** Calls while Redis is killed and restarted: each ends by its deadline with a typed answer. */
const chaos = Effect.gen(function* () {
  const g = yield* ModelGateway.ModelGateway
  const before = { ...counters }
  const recorder = yield* CallRecorder.MemoryRecorder
  const earlier = (yield* recorder.records).length
  const results = yield* Effect.forEach(
    Array.from({ length: Plan.chaosCalls }, (_, i) => i),
    (i) =>
      Effect.gen(function* () {
        yield* Effect.sleep(Duration.millis(i * Plan.chaosSpacingMs))
        const started = Date.now()
        const exit = yield* Effect.exit(g.generate(command("mr.chaos", i)))
        return { tag: errorTagOf(exit), ms: Date.now() - started }
      }),
    { concurrency: "unbounded" }
  )
  const late = results.filter((r) => r.ms > Plan.chaosDeadlineMs + Plan.lateMarginMs).length
  // Calls that answered while Redis died after their reservation: the commit is retried later.
  const pending = (yield* recorder.records).slice(earlier).filter((r) => r.settlement === "pending").length
  const untyped = results.filter((r) => r.tag === "defect" || r.tag === "Interrupt").length
  return {
    calls: results.length,
    outcomes: countBy(results.map((r) => r.tag)),
    late,
    untyped,
    maxMs: Math.max(...results.map((r) => r.ms)),
    pending,
    providerCalls: counters.providerCalls - before.providerCalls
  }
})

/** After Redis is back: calls until one succeeds, without restarting anything. */
const recover = Effect.gen(function* () {
  const g = yield* ModelGateway.ModelGateway
  const started = Date.now()
  for (let i = 0; Date.now() - started < 15_000; i++) {
    const exit = yield* Effect.exit(g.generate(command("mr.load", 10_000 + i)))
    if (Exit.isSuccess(exit)) return { recovered: true, afterMs: Date.now() - started, attempts: i + 1 }
    yield* Effect.sleep(Duration.millis(100))
  }
  return { recovered: false, afterMs: Date.now() - started, attempts: -1 }
})

const phases: Record<
  string,
  Effect.Effect<
    unknown,
    never,
    ModelGateway.ModelGateway | Health.Health | ToolLedger.ToolLedger | CallRecorder.MemoryRecorder
  >
> = {
  load,
  openBreaker,
  checkBreaker,
  tool,
  chaos,
  recover
}

const send = (message: Plan.FromChild) => process.send?.(message)

process.on("message", (message: Plan.ToChild) => {
  if (message.phase === "exit") {
    // Pending commits retry in the background until their reservations expire: not waited for.
    process.exit(0)
  }
  const phase = phases[message.phase]
  if (phase === undefined) return
  runtime
    .runPromise(phase)
    .then((result) => send({ phase: message.phase, index, result, counters: { ...counters }, checks: { ...checks } }))
    .catch((e: unknown) => send({ phase: message.phase, index, error: String(e) }))
})

runtime
  .runPromise(ModelGateway.ModelGateway)
  .then(() => send({ phase: "ready", index }))
  .catch((e: unknown) => send({ phase: "ready", index, error: String(e) }))
