/**
 * The generated-registry property of the router (issue 25), run by `RoutingProperty.test.ts` (CI)
 * and `RoutingProperty.slow.test.ts` (more cases): random targets (capabilities,
 * regions, data classes, windows, prices, versions, status), random requests (regions, data class,
 * tools, input size, output cap, minContextTokens, maxCost, deadline), random selection modes and
 * breaker states. Each decision is checked against an oracle of its own (the hard constraints
 * written out again here, not read from the router): no eligible target violates a hard
 * constraint, every route target is either eligible or excluded with a reason, no target the oracle
 * finds eligible is excluded (except by the fallback rule), and no decision ends in a defect.
 */
import { assert } from "@effect/vitest"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { costAt, outputCapAt } from "@modelgate/core/Pricing"
import { inputTokensAt, minimumUsefulOutputTokens } from "../src/internal/affordable.js"
import * as TokenEstimator from "@modelgate/core/TokenEstimator"
import { Workflow } from "@modelgate/core/Workflow"
import { Cause, Effect, Exit, FastCheck as fc, Logger, LogLevel, Schema } from "effect"
import * as Router from "../src/internal/router/engine.js"

const decodeTarget = Schema.decodeSync(ModelTarget)
const decodeWorkflow = Schema.decodeSync(Workflow)
const decodeCommand = Schema.decodeSync(ModelCommand)

const allRegions: ReadonlyArray<string> = ["eu", "us"]
const allClasses: ReadonlyArray<string> = ["public", "internal", "confidential"]

const subset = <A>(of: ReadonlyArray<A>) =>
  fc.subarray([...of], { minLength: 1 }).map((xs) => xs as unknown as readonly [A, ...Array<A>])

const targetArb = fc.record({
  vision: fc.boolean(),
  tools: fc.constantFrom(true, true, false),
  streaming: fc.constantFrom(true, true, true, false),
  contextWindow: fc.constantFrom(40, 200, 320, 1_000, 128_000, 128_000, 128_000),
  maxOutputTokens: fc.constantFrom(16, 256, 4_096, 32_000),
  regions: fc.constantFrom<readonly [string, ...Array<string>]>(["eu"], ["eu"], ["us"], ["eu", "us"]),
  dataClasses: fc.constantFrom<readonly [string, ...Array<string>]>(
    ["public", "internal", "confidential"],
    ["public", "internal", "confidential"],
    ["public", "internal"],
    ["public"]
  ),
  inputPerMillion: fc.constantFrom(0, 0.1, 0.4, 3, 15),
  outputPerMillion: fc.constantFrom(0, 0.4, 1.6, 15, 75),
  status: fc.constantFrom<"active" | "deprecated" | "disabled">("active", "active", "active", "deprecated", "disabled"),
  version: fc.constantFrom("v1", "v2"),
  quality: fc.constantFrom<"low" | "standard" | "high" | undefined>("low", "standard", "high", undefined),
  latency: fc.constantFrom<"fast" | "medium" | "slow" | undefined>("fast", "medium", "slow", undefined),
  factor: fc.constantFrom(1, 1, 1.2),
  open: fc.constantFrom(false, false, false, true)
})
type TargetSpec = typeof targetArb extends fc.Arbitrary<infer A> ? A : never

const requestArb = fc.record({
  workflowRegions: fc.constantFrom<readonly [string, ...Array<string>]>(["eu", "us"], ["eu", "us"], ["eu"]),
  regions: fc.option(subset(allRegions), { nil: undefined, freq: 3 }),
  workflowClass: fc.constantFrom("internal", "internal", "public", "confidential"),
  dataClass: fc.option(fc.constantFrom(...allClasses), { nil: undefined, freq: 3 }),
  tools: fc.constantFrom(false, false, true),
  words: fc.integer({ min: 1, max: 300 }),
  maxOutputTokens: fc.option(fc.constantFrom(1, 16, 500, 8_000, 100_000), { nil: undefined }),
  minContextTokens: fc.option(fc.constantFrom(100, 1_000, 64_000), { nil: undefined, freq: 3 }),
  maxCost: fc.option(fc.constantFrom(0.00001, 0.001, 0.1), { nil: undefined, freq: 3 }),
  timeout: fc.constantFrom(500, 1_500, 10_000),
  selection: fc.constantFrom<"ordered" | "scored">("ordered", "scored"),
  allowFallback: fc.boolean(),
  mode: fc.constantFrom<"generate" | "stream">("generate", "generate", "stream"),
  timeLeftMs: fc.option(fc.integer({ min: 1, max: 20_000 }), { nil: undefined })
})
type RequestSpec = typeof requestArb extends fc.Arbitrary<infer A> ? A : never

export const caseArb = fc.record({ targets: fc.array(targetArb, { minLength: 1, maxLength: 5 }), request: requestArb })

const targetOf = (spec: TargetSpec, i: number): ModelTarget =>
  decodeTarget({
    ref: `model://p${i}/m@${spec.regions.join("+")}`,
    provider: `p${i}`,
    model: `m-${spec.version}`,
    capabilities: {
      vision: spec.vision,
      tools: spec.tools,
      streaming: spec.streaming,
      structuredOutput: { mode: "json_schema" },
      contextWindow: spec.contextWindow,
      maxOutputTokens: spec.maxOutputTokens
    },
    regions: spec.regions,
    dataClasses: spec.dataClasses,
    pricing: {
      inputPerMillion: spec.inputPerMillion,
      outputPerMillion: spec.outputPerMillion,
      currency: "USD",
      pricingVersion: "gen-1"
    },
    classes: {
      ...(spec.quality === undefined ? {} : { quality: spec.quality }),
      ...(spec.latency === undefined ? {} : { latency: spec.latency })
    },
    status: spec.status,
    tokenizerSafetyFactor: spec.factor
  })

/** The oracle: every hard constraint `target` breaks for the request (empty: it may serve). */
const broken = (
  t: ModelTarget,
  spec: TargetSpec,
  r: RequestSpec,
  w: Workflow,
  command: ModelCommand,
  inputTokens: number
): Array<string> => {
  const out: Array<string> = []
  const caps = t.capabilities
  const regions = r.regions ?? r.workflowRegions
  if (t.status === "disabled") out.push("disabled")
  if (!t.regions.every((x) => regions.includes(x) && r.workflowRegions.includes(x))) out.push("region")
  if (!t.dataClasses.includes(r.dataClass ?? r.workflowClass) || !t.dataClasses.includes(r.workflowClass))
    out.push("dataClass")
  if (r.tools && !caps.tools) out.push("tools")
  if (r.mode === "stream" && !caps.streaming) out.push("streaming")
  if (r.minContextTokens !== undefined && caps.contextWindow < r.minContextTokens) out.push("minContext")
  const input = inputTokensAt(inputTokens, t)
  if (input + 1 > caps.contextWindow) out.push("context")
  else if (r.maxCost !== undefined && costAt(t, input, minimumUsefulOutputTokens) > r.maxCost) out.push("maxCost")
  if (spec.open) out.push("breaker")
  // what the call would send: input + output within the window, at least one output token
  const cap = outputCapAt(command.maxOutputTokens, w.maxOutputTokens, t, input)
  if (!out.includes("context") && (cap < 1 || input + cap > caps.contextWindow)) out.push("outputCap")
  return out
}

const lookup = {
  name: "lookup",
  description: "Looks a ticket up",
  parameters: { type: "object", properties: { id: { type: "string" } } }
}

/** Cases checked and cases that routed (at least one eligible target), for the run's coverage. */
export interface Tally {
  cases: number
  routed: number
}

/** Runs one generated case through `Router.decide` and checks it against the oracle; counts it in `tally`. */
export const check = async (targetSpecs: ReadonlyArray<TargetSpec>, r: RequestSpec, tally: Tally): Promise<void> => {
  tally.cases++
  const targets = targetSpecs.map(targetOf)
  const refs = targets.map((t) => t.ref) as unknown as readonly [string, ...Array<string>]
  const workflow = decodeWorkflow({
    name: "gen",
    policyVersion: "gen-policy",
    prompt: { id: "gen.prompt", version: "1" },
    route: refs,
    timeout: 10_000,
    regions: r.workflowRegions,
    dataClass: r.workflowClass,
    selection: r.selection,
    allowFallback: r.allowFallback
  })
  const compiled = GatewayConfig.compile({
    config: GatewayConfig.GatewayConfig.make({ targets, workflows: [workflow] }),
    schemas: {}
  })
  const command = decodeCommand({
    workflow: "gen",
    tenant: "acme",
    messages: [{ _tag: "user", content: "word ".repeat(r.words) }],
    timeout: r.timeout,
    ...(r.tools ? { tools: [lookup] } : {}),
    ...(r.regions === undefined ? {} : { regions: r.regions }),
    ...(r.dataClass === undefined ? {} : { dataClass: r.dataClass }),
    ...(r.maxOutputTokens === undefined ? {} : { maxOutputTokens: r.maxOutputTokens }),
    ...(r.minContextTokens === undefined ? {} : { minContextTokens: r.minContextTokens }),
    ...(r.maxCost === undefined ? {} : { maxCost: r.maxCost })
  })
  const open = new Set(targets.filter((_, i) => targetSpecs[i]!.open).map((t) => t))
  const breakers: Router.BreakerView = { isOpen: (t) => Effect.succeed(open.has(t)) }
  // Run as a caller does: a large input is counted in slices that give the event loop turns.
  const exit = await Effect.runPromiseExit(
    Router.decide(Router.routed(compiled), breakers, command, r.mode, true, "call-1", r.timeLeftMs).pipe(
      // the deprecation warning of each generated registry is not what is checked here
      Logger.withMinimumLogLevel(LogLevel.None)
    )
  )
  // no untyped defect, whatever the case
  assert.isFalse(
    Exit.isFailure(exit) && !Cause.isFailType(exit.cause),
    `defect: ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""}`
  )
  const requestRegionsOutside = r.regions?.some((x) => !r.workflowRegions.includes(x)) ?? false
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause)
    assert.isTrue(failure._tag === "Some")
    if (failure._tag !== "Some") return
    const f = failure.value
    if (f._tag === "InvalidRequest") {
      // refused before routing: regions outside the workflow's are the only generated reason
      assert.isTrue(requestRegionsOutside, `unexpected InvalidRequest: ${JSON.stringify(f)}`)
      return
    }
    assert.strictEqual(f._tag, "NoEligibleRoute", JSON.stringify(f))
    if (f._tag !== "NoEligibleRoute") return
    // nothing was eligible: every target broke a hard constraint, each excluded with a reason
    // the router counts what is sent: messages and tools (no output schema here)
    const inputTokens = TokenEstimator.estimateInput({ messages: command.messages, tools: command.tools })
    targets.forEach((t, i) => {
      const why = broken(t, targetSpecs[i]!, r, workflow, command, inputTokens)
      assert.isAbove(why.length, 0, `${t.ref} was eligible but nothing was routed`)
    })
    assert.strictEqual(f.excluded.length, targets.length)
    for (const e of f.excluded) assert.isAbove(e.detail.length, 0)
    return
  }
  assert.isFalse(requestRegionsOutside)
  tally.routed++
  const route = exit.value
  const inputTokens = route.inputTokens!
  const eligible = new Set(route.targets)
  // every route target is either eligible or excluded, once, with a reason
  const seen = new Map<string, number>()
  for (const t of route.targets) seen.set(t.ref, (seen.get(t.ref) ?? 0) + 1)
  for (const e of route.excluded) {
    seen.set(e.target, (seen.get(e.target) ?? 0) + 1)
    assert.isAbove(e.detail.length, 0)
  }
  for (const t of targets) assert.strictEqual(seen.get(t.ref), 1, `${t.ref} eligible or excluded once`)
  targets.forEach((t, i) => {
    const why = broken(t, targetSpecs[i]!, r, workflow, command, inputTokens)
    if (eligible.has(t)) {
      // no hard constraint broken by an eligible target
      assert.deepStrictEqual(why, [], `${t.ref} routed despite ${why.join(", ")}`)
    } else if (why.length === 0) {
      // an eligible target excluded only by the fallback rule
      const reason = route.excluded.find((e) => e.target === t.ref)?.reason
      assert.strictEqual(reason, "FALLBACK_NOT_ALLOWED", `${t.ref} excluded without cause`)
      assert.isFalse(r.allowFallback)
    }
  })
  assert.isAtLeast(route.targets.length, 1)
  if (!r.allowFallback) assert.strictEqual(route.targets.length, 1)
}

/**
 * Checks `numRuns` generated cases and that the generator reached both sides: routed decisions
 * and refusals.
 */
export const checkGenerated = async (numRuns: number): Promise<void> => {
  const tally = { cases: 0, routed: 0 }
  await fc.assert(
    fc.asyncProperty(caseArb, ({ request, targets }) => check(targets, request, tally)),
    { numRuns }
  )
  assert.isAbove(tally.routed, tally.cases / 10)
  assert.isBelow(tally.routed, tally.cases)
}
