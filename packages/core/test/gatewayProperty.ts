/**
 * The generated-registry property of the whole gateway (issue 25), run by
 * `GatewayProperty.test.ts` (CI) and `GatewayProperty.slow.test.ts` (more cases). Each case is a
 * random registry (prices, free output included, context windows, output limits, tools and vision,
 * tiers, tenant-dedicated targets, tokenizer factors), a random workflow (selection, fallback,
 * output cap), a random tenant budget, a vouched tenant or none, a scripted provider per target
 * (answers with reported usage around the estimate, output overshooting the cap, 503s), and one
 * to three calls through the real `ModelGateway` under `TestClock`.
 *
 * Every call is checked against an oracle written out here from the spec's rules, not read from
 * the engine: every attempt (and the served target) keeps the hard constraints (tenant binding,
 * capabilities, `minContextTokens`, input + the output cap it was sent within the window, its worst
 * case within the reservation, the reservation within what the budget had left); a refusal happens
 * only when the oracle finds nothing eligible (`NoEligibleRoute`) or nothing affordable
 * (`BudgetExceeded`); money is exact in integer billionths (each attempt's cost is its reported
 * usage at the price table's units, computed here with BigInt; `evidence.cost.actual` is their
 * sum; the budget commits exactly that, overspend beyond the limit included); the budget holds no
 * reservation and no permit is held after any call, failures included; the provider saw exactly
 * the attempts the evidence lists; and no call ends in a defect.
 */
import { assert } from "@effect/vitest"
import * as Budgets from "@modelgate/core/Budgets"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import * as Health from "@modelgate/core/Health"
import { ModelCommand, TenantId } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import type { Evidence } from "@modelgate/core/ModelResult"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import * as Tenancy from "@modelgate/core/Tenancy"
import * as TokenEstimator from "@modelgate/core/TokenEstimator"
import { Workflow } from "@modelgate/core/Workflow"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import {
  Cause,
  Effect,
  Exit,
  FastCheck as fc,
  Fiber,
  Layer,
  Logger,
  LogLevel,
  Option,
  Runtime,
  Schema,
  TestClock
} from "effect"

const decodeTarget = Schema.decodeSync(ModelTarget)
const decodeWorkflow = Schema.decodeSync(Workflow)
const decodeCommand = Schema.decodeSync(ModelCommand)

const acme = TenantId.make("acme")

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/** One scripted answer: a success with usage relative to the estimate, or a 503. */
const outcomeArb = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      _tag: fc.constant("ok" as const),
      after: fc.integer({ min: 0, max: 2_000 }),
      /** Reported input tokens minus the estimate at the target (safety factor applied). */
      inputDelta: fc.constantFrom(-3, 0, 0, 0, 1, 5),
      /** Reported output tokens (may overshoot the cap the attempt was sent with). */
      outputTokens: fc.constantFrom(0, 1, 20, 20, 300, 5_000)
    })
  },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("down" as const), after: fc.integer({ min: 0, max: 500 }) }) }
)
type OutcomeSpec = typeof outcomeArb extends fc.Arbitrary<infer A> ? A : never

const targetArb = fc.record({
  inputPerMillion: fc.constantFrom(0, 0.075, 0.1, 0.4, 1.1, 3, 15),
  outputPerMillion: fc.constantFrom(0, 0, 0.3, 1.6, 4.4, 15, 75),
  contextWindow: fc.constantFrom(60, 200, 1_000, 128_000, 128_000, 128_000),
  maxOutputTokens: fc.constantFrom(16, 256, 4_096),
  tools: fc.constantFrom(true, true, false),
  vision: fc.boolean(),
  quality: fc.constantFrom<"low" | "standard" | "high">("low", "standard", "high"),
  latency: fc.constantFrom<"fast" | "medium" | "slow">("fast", "medium", "slow"),
  tenants: fc.constantFrom<ReadonlyArray<string> | undefined>(
    undefined,
    undefined,
    undefined,
    undefined,
    ["acme"],
    ["globex"],
    ["acme", "globex"]
  ),
  factor: fc.constantFrom(1, 1, 1.2),
  script: fc.array(outcomeArb, { minLength: 1, maxLength: 3 })
})
type TargetSpec = typeof targetArb extends fc.Arbitrary<infer A> ? A : never

const callArb = fc.record({
  maxOutputTokens: fc.option(fc.constantFrom(1, 16, 100, 2_000, 100_000), { nil: undefined }),
  minContextTokens: fc.option(fc.constantFrom(100, 64_000), { nil: undefined, freq: 4 })
})
type CallSpec = typeof callArb extends fc.Arbitrary<infer A> ? A : never

/** A generated case: registry, workflow, budget, identity, the request's shape and its calls. */
export const caseArb = fc.record({
  targets: fc.array(targetArb, { minLength: 1, maxLength: 4 }),
  selection: fc.constantFrom<"ordered" | "scored">("ordered", "scored"),
  allowFallback: fc.constantFrom(true, true, false),
  workflowMaxOutputTokens: fc.option(fc.constantFrom(64, 512, 8_192), { nil: undefined }),
  limit: fc.constantFrom(0.00005, 0.0005, 0.005, 0.05, 5),
  vouched: fc.constantFrom(true, true, false),
  words: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 400 })),
  tools: fc.constantFrom(false, false, true),
  image: fc.constantFrom(false, false, false, false, true),
  calls: fc.array(callArb, { minLength: 1, maxLength: 3 })
})
export type Case = typeof caseArb extends fc.Arbitrary<infer A> ? A : never

// ---------------------------------------------------------------------------------------------
// The oracle's own arithmetic
// ---------------------------------------------------------------------------------------------

/** Billionths of a currency unit of `tokens` at `pricePerMillion`, rounded up (BigInt: exact). */
const priceUnits = (tokens: number, pricePerMillion: number): bigint => {
  if (tokens <= 0) return 0n
  const perMillion = BigInt(Math.round(pricePerMillion * 1_000_000_000))
  return (BigInt(tokens) * perMillion + 999_999n) / 1_000_000n
}
const costUnits = (t: ModelTarget, input: number, output: number): number =>
  Number(priceUnits(input, t.pricing.inputPerMillion) + priceUnits(output, t.pricing.outputPerMillion))
const units = (x: number) => Math.round(x * 1_000_000_000)

/** The output cap of a call at `t` (command's, else workflow's, else 4,096; within the window after the input). */
const capAt = (call: CallSpec, workflowMax: number | undefined, t: ModelTarget, input: number) =>
  Math.max(
    0,
    Math.min(
      call.maxOutputTokens ?? workflowMax ?? 4_096,
      workflowMax ?? Infinity,
      t.capabilities.maxOutputTokens,
      t.capabilities.contextWindow - input
    )
  )

/** Every hard constraint (budget aside) `t` breaks for the call; empty: it may serve. */
const broken = (t: ModelTarget, c: Case, call: CallSpec, input: number): Array<string> => {
  const out: Array<string> = []
  if (t.tenants !== undefined && !(c.vouched && t.tenants.includes(acme))) out.push("tenant")
  if (c.tools && !t.capabilities.tools) out.push("tools")
  if (c.image && !t.capabilities.vision) out.push("vision")
  if (call.minContextTokens !== undefined && t.capabilities.contextWindow < call.minContextTokens)
    out.push("minContext")
  if (input + 1 > t.capabilities.contextWindow || capAt(call, c.workflowMaxOutputTokens, t, input) < 1)
    out.push("context")
  return out
}

// ---------------------------------------------------------------------------------------------
// The gateway of a case
// ---------------------------------------------------------------------------------------------

const lookup = { name: "lookup", description: "Looks a ticket up", parameters: { type: "object" } }

const messagesOf = (c: Case): typeof ModelCommand.Encoded.messages => [
  { _tag: "system", content: "You answer support tickets." },
  {
    _tag: "user",
    content: c.image
      ? [
          { _tag: "text", text: "ticket ".repeat(c.words) },
          { _tag: "image", url: "https://example.com/receipt.png" }
        ]
      : "ticket ".repeat(c.words)
  }
]

const targetOf = (spec: TargetSpec, i: number): ModelTarget =>
  decodeTarget({
    ref: `model://p${i}/m${i}@eu`,
    provider: `p${i}`,
    model: `m${i}`,
    capabilities: {
      vision: spec.vision,
      tools: spec.tools,
      streaming: true,
      structuredOutput: { mode: "json_schema" },
      contextWindow: spec.contextWindow,
      maxOutputTokens: spec.maxOutputTokens
    },
    regions: ["eu"],
    dataClasses: ["public", "internal", "confidential"],
    pricing: {
      inputPerMillion: spec.inputPerMillion,
      outputPerMillion: spec.outputPerMillion,
      currency: "USD",
      pricingVersion: "gen-1"
    },
    classes: { quality: spec.quality, latency: spec.latency },
    ...(spec.tenants === undefined ? {} : { tenants: spec.tenants }),
    tokenizerSafetyFactor: spec.factor
  })

const scriptOf = (spec: ReadonlyArray<OutcomeSpec>, input: number): ReadonlyArray<ScriptedProvider.Outcome> =>
  spec.map((o) =>
    o._tag === "down"
      ? ScriptedProvider.unavailable({ after: o.after })
      : ScriptedProvider.success({
          after: o.after,
          usage: { inputTokens: Math.max(0, input + o.inputDelta), outputTokens: o.outputTokens }
        })
  )

/** Calls, outcomes and money seen over a run (coverage of the generator). */
export interface Tally {
  cases: number
  calls: number
  served: number
  budgetExceeded: number
  noEligibleRoute: number
  providerFailures: number
  overspent: number
  aboveReservation: number
  fallbacks: number
}

export const emptyTally = (): Tally => ({
  cases: 0,
  calls: 0,
  served: 0,
  budgetExceeded: 0,
  noEligibleRoute: 0,
  providerFailures: 0,
  overspent: 0,
  aboveReservation: 0,
  fallbacks: 0
})

/**
 * Runs one generated case through a fresh gateway and checks every call. Run it where `TestClock`
 * is the clock (`it.effect`): it moves virtual time.
 */
export const runCase = (c: Case, tally: Tally): Effect.Effect<void> => {
  tally.cases++
  const targets = c.targets.map(targetOf)
  const byRef = new Map(targets.map((t) => [t.ref as string, t]))
  const workflow = decodeWorkflow({
    name: "gen",
    policyVersion: "gen-policy",
    prompt: { id: "gen.prompt", version: "1" },
    route: targets.map((t) => t.ref) as unknown as readonly [string, ...Array<string>],
    timeout: 10_000,
    regions: ["eu"],
    dataClass: "internal",
    selection: c.selection,
    allowFallback: c.allowFallback,
    ...(c.workflowMaxOutputTokens === undefined ? {} : { maxOutputTokens: c.workflowMaxOutputTokens })
  })
  const commandOf = (call: CallSpec) =>
    decodeCommand({
      workflow: "gen",
      tenant: "acme",
      messages: messagesOf(c),
      ...(c.tools ? { tools: [lookup] } : {}),
      ...(call.maxOutputTokens === undefined ? {} : { maxOutputTokens: call.maxOutputTokens }),
      ...(call.minContextTokens === undefined ? {} : { minContextTokens: call.minContextTokens })
    })
  // every call of a case sends the same messages and tools: one estimate, as the router counts it
  const probe = commandOf({ maxOutputTokens: undefined, minContextTokens: undefined })
  const estimate = TokenEstimator.estimateInput({
    messages: probe.messages,
    tools: probe.tools,
    outputJsonSchema: undefined
  })
  const inputAt = (t: ModelTarget) => Math.ceil(estimate * t.tokenizerSafetyFactor)
  const scripts: ScriptedProvider.Scripts = Object.fromEntries(
    targets.map((t, i) => [t.ref, scriptOf(c.targets[i]!.script, inputAt(t))])
  )
  const limitUnits = units(c.limit)
  const layer = ModelGateway.layer({
    config: GatewayConfig.GatewayConfig.make({ targets, workflows: [workflow] }),
    schemas: {}
  }).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers: targets.map((t) => t.provider), scripts })),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layer({ tenants: { acme: { limit: c.limit, period: "total" } } }).pipe(
          Layer.provide(BudgetStore.layerMemory)
        ),
        Concurrency.layerMemory({ permits: 2 }),
        Health.layerOff,
        CallRecorder.layerMemory
      )
    )
  )
  const identity: Tenancy.Identity = { tenant: acme, authority: "test" }

  const oneCall = (call: CallSpec) =>
    Effect.gen(function* () {
      tally.calls++
      const gateway = yield* ModelGateway.ModelGateway
      const budgets = yield* Budgets.Budgets
      const provider = yield* ScriptedProvider.ScriptedProvider
      const recorder = yield* CallRecorder.MemoryRecorder
      const before = yield* budgets.balance(acme)
      const attemptsBefore = (yield* provider.attempts).length
      const recordsBefore = (yield* recorder.records).length
      const generate = Effect.exit(gateway.generate(commandOf(call)))
      const fiber = yield* Effect.fork(c.vouched ? Tenancy.vouch(generate, identity) : generate)
      yield* TestClock.adjust(60_000)
      const done = yield* Fiber.poll(fiber)
      assert.isTrue(Option.isSome(done), "the call ended within its timeout")
      const exit = yield* Fiber.join(fiber)
      const after = yield* budgets.balance(acme)
      const permits = yield* Effect.flatMap(Concurrency.Concurrency, (x) => x.snapshot)
      const seen = (yield* provider.attempts).slice(attemptsBefore)
      const records = (yield* recorder.records).slice(recordsBefore)
      const describe = () => JSON.stringify({ call, exit: Exit.isSuccess(exit) ? "success" : String(exit.cause) })

      // no defect, no interruption: a success or a typed failure
      if (Exit.isFailure(exit)) {
        assert.isFalse(Cause.isDie(exit.cause) || Cause.isInterrupted(exit.cause), `untyped: ${describe()}`)
        assert.isTrue(Option.isSome(Cause.failureOption(exit.cause)), describe())
      }
      // settled after every call: nothing reserved, no permit held
      assert.strictEqual(after.reserved, 0, `reserved after the call: ${describe()}`)
      assert.deepStrictEqual([permits.inUse, permits.waiting], [0, 0], describe())

      const left = limitUnits - units(before.committed)
      const input = (t: ModelTarget) => inputAt(t)
      const worst = (t: ModelTarget) => costUnits(t, input(t), capAt(call, c.workflowMaxOutputTokens, t, input(t)))
      const eligible = targets.filter((t) => broken(t, c, call, input(t)).length === 0)
      const affordable = eligible.filter((t) => worst(t) <= left)

      const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      if (failure?._tag === "NoEligibleRoute") {
        tally.noEligibleRoute++
        assert.deepStrictEqual(eligible, [], `NoEligibleRoute with an eligible target: ${describe()}`)
      }
      if (failure?._tag === "BudgetExceeded") {
        tally.budgetExceeded++
        assert.isAbove(eligible.length, 0, `BudgetExceeded where nothing was eligible: ${describe()}`)
        assert.deepStrictEqual(affordable, [], `BudgetExceeded with an affordable target: ${describe()}`)
      }
      if (failure === undefined || (failure._tag !== "NoEligibleRoute" && failure._tag !== "BudgetExceeded")) {
        // it routed: something eligible fit the budget
        assert.isAbove(affordable.length, 0, `routed with nothing eligible and affordable: ${describe()}`)
      }

      // the evidence: of the answer, else of the call's record
      assert.strictEqual(records.length, 1, `one record per call: ${describe()}`)
      const evidence: Evidence = Exit.isSuccess(exit) ? exit.value.evidence : records[0]!.evidence
      // every target is accounted for: eligible (and the oracle agrees), or excluded with a reason
      for (const ref of evidence.eligible) {
        const t = byRef.get(ref)
        assert.isTrue(t !== undefined && eligible.includes(t), `eligible against the oracle: ${ref} ${describe()}`)
      }
      // (a call no target could serve has its exclusions on the error, not in its record)
      const exclusions = failure?._tag === "NoEligibleRoute" ? failure.excluded : evidence.excluded
      const excluded = new Map(exclusions.map((e) => [e.target as string, e.reason]))
      for (const t of targets) {
        const reason = excluded.get(t.ref)
        assert.isTrue(evidence.eligible.includes(t.ref) !== (reason !== undefined), `${t.ref} once: ${describe()}`)
        // a target the oracle finds eligible and affordable is excluded only by the fallback rule
        if (affordable.includes(t) && reason !== undefined)
          assert.strictEqual(reason, "FALLBACK_NOT_ALLOWED", describe())
      }
      const reserved = units(evidence.cost.reserved)
      assert.isAtMost(reserved, Math.max(0, left), `reserved more than was left: ${describe()}`)

      // the provider saw exactly the attempts the evidence lists, each within the hard constraints
      assert.deepStrictEqual(
        seen.map((a): [string, number | undefined] => [a.target, a.maxOutputTokens]),
        evidence.attempts.map((a): [string, number | undefined] => [a.target, a.maxOutputTokens]),
        describe()
      )
      let spent = 0
      let withinEstimate = true
      for (const a of evidence.attempts) {
        const t = byRef.get(a.target)
        assert.isDefined(t, describe())
        if (t === undefined) continue
        assert.deepStrictEqual(broken(t, c, call, input(t)), [], `attempt on an ineligible target: ${describe()}`)
        const cap = a.maxOutputTokens ?? 0
        assert.isAtLeast(cap, 1, describe())
        assert.isAtMost(input(t) + cap, t.capabilities.contextWindow, `input + output over the window: ${describe()}`)
        assert.isAtMost(
          costUnits(t, input(t), cap),
          reserved,
          `attempt's worst case above the reservation: ${describe()}`
        )
        const cost = a.usage === undefined ? 0 : costUnits(t, a.usage.inputTokens, a.usage.outputTokens)
        assert.strictEqual(units(a.cost ?? 0), cost, `attempt cost: ${describe()}`)
        spent += cost
        if (a.usage !== undefined && (a.usage.inputTokens > input(t) || a.usage.outputTokens > cap))
          withinEstimate = false
      }
      if (failure?._tag === "NoEligibleRoute" || failure?._tag === "BudgetExceeded") {
        assert.deepStrictEqual(evidence.attempts, [], describe())
      } else if (failure !== undefined) {
        tally.providerFailures++
        assert.isAbove(evidence.attempts.length, 0, `a provider failure without an attempt: ${describe()}`)
        assert.isTrue(
          evidence.attempts.every((a) => a.outcome !== "success"),
          describe()
        )
      }
      // money: the evidence's actual is the attempts' costs; the budget committed exactly that
      const actual = units(evidence.cost.actual)
      assert.strictEqual(actual, spent, `evidence.cost.actual ≠ Σ attempt costs: ${describe()}`)
      assert.strictEqual(units(after.committed) - units(before.committed), actual, `committed ≠ actual: ${describe()}`)
      if (withinEstimate)
        assert.isAtMost(actual, reserved, `spent above the reservation within the estimate: ${describe()}`)
      if (actual > reserved) tally.aboveReservation++
      const room = Math.max(0, limitUnits - units(before.committed) - reserved)
      const overspent = Math.max(0, actual - reserved - room)
      assert.strictEqual(units(evidence.cost.overspent ?? 0), overspent, `evidence.cost.overspent: ${describe()}`)
      assert.strictEqual(units(after.overspent) - units(before.overspent), overspent, describe())
      if (overspent > 0) tally.overspent++

      if (Exit.isSuccess(exit)) {
        tally.served++
        const served = byRef.get(evidence.target ?? "")
        assert.isDefined(served, describe())
        if (served === undefined) return
        assert.deepStrictEqual(
          broken(served, c, call, input(served)),
          [],
          `served by an ineligible target: ${describe()}`
        )
        assert.isAtMost(worst(served), left, `served by a target the budget could not afford: ${describe()}`)
        assert.strictEqual(evidence.attempts.at(-1)?.target, served.ref, describe())
        assert.strictEqual(evidence.attempts.at(-1)?.outcome, "success", describe())
        if (evidence.fallbackUsed) tally.fallbacks++
      }
    })

  return Effect.forEach(c.calls, oneCall, { discard: true }).pipe(
    Effect.provide(layer),
    // the warnings of generated overspends and retries are not what is checked here
    Logger.withMinimumLogLevel(LogLevel.None),
    // a layer that does not build (a generated registry the gateway refuses) fails the case
    Effect.orDie
  )
}

/**
 * Asserts that a run reached every kind of call the oracle distinguishes: served, refused by the
 * budget, refused for want of an eligible target, failed at the providers, spent above its
 * reservation, and overspent beyond the limit.
 */
export const assertCoverage = (tally: Tally): void => {
  const kinds = [
    "served",
    "budgetExceeded",
    "noEligibleRoute",
    "providerFailures",
    "aboveReservation",
    "overspent"
  ] as const
  for (const kind of kinds) assert.isAbove(tally[kind], 0, `no call of kind ${kind} in ${JSON.stringify(tally)}`)
}

/**
 * Checks `numRuns` generated cases (fast-check, shrinking a failing case) in the calling test's
 * runtime (its `TestClock`), and returns what they covered.
 */
export const checkCases = (numRuns: number): Effect.Effect<Tally> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => {
    const tally = emptyTally()
    return Effect.as(
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(caseArb, (c) => Runtime.runPromise(runtime, runCase(c, tally))),
          { numRuns }
        )
      ),
      tally
    )
  })
