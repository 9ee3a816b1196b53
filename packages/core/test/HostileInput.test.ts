import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import { TargetRef } from "@modelgate/core/ModelTarget"
import * as RouteDecision from "@modelgate/core/RouteDecision"
import { ScriptedProvider } from "@modelgate/testing"
import { Arbitrary, Cause, Effect, Exit, FastCheck as fc, Fiber, Option, ParseResult, Schema, TestClock } from "effect"
import { gatewayLayer, plainTarget, plainWorkflow, refs, exclusionsOf } from "./fixtures.js"
import { maxDetailLength } from "../src/internal/routeSchemas.js"

/** Decoding untrusted input: a value or a typed ParseError, never a throw or a defect. */
const decodeCommand = (input: unknown): "ok" | "rejected" => {
  const exit = Effect.runSyncExit(ModelCommand.decodeUnknown(input))
  if (Exit.isSuccess(exit)) return "ok"
  const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
  if (!ParseResult.isParseError(error)) throw new Error(`not a typed error: ${Cause.pretty(exit.cause)}`)
  // the message renders (bounded work, no throw)
  assert.isString(error.message)
  return "rejected"
}

const decodeConfig = (input: unknown): "ok" | "rejected" => {
  const exit = Effect.runSyncExit(GatewayConfig.decode(input))
  if (Exit.isSuccess(exit)) return "ok"
  const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
  if (error?._tag !== "GatewayConfigError") throw new Error(`not a typed error: ${Cause.pretty(exit.cause)}`)
  assert.isAbove(error.problems.length, 0)
  assert.isString(error.message)
  return "rejected"
}

const validCommand = {
  workflow: "ticket.reply",
  tenant: "acme",
  messages: [{ _tag: "user", content: "hello" }]
}

const validConfig = {
  targets: [plainTarget],
  workflows: [plainWorkflow]
}

/** Replaces the value at a random path of `value` with `replacement`. */
const mutateAt = (value: unknown, path: ReadonlyArray<number>, replacement: unknown): unknown => {
  if (path.length === 0 || value === null || typeof value !== "object") return replacement
  const [head, ...rest] = path
  if (Array.isArray(value)) {
    if (value.length === 0) return replacement
    const i = head! % value.length
    return value.map((v, j) => (j === i ? mutateAt(v, rest, replacement) : v))
  }
  const keys = Object.keys(value)
  if (keys.length === 0) return replacement
  const key = keys[head! % keys.length]!
  return { ...value, [key]: mutateAt((value as Record<string, unknown>)[key], rest, replacement) }
}

// What JSON.parse can produce, plus values other parsers produce (Dates, Maps, sparse arrays,
// bigints, non-finite numbers). Null-prototype objects are a known gap, tested on their own below.
const garbage = fc.oneof(
  fc.jsonValue({ maxDepth: 6 }),
  fc.anything({
    maxDepth: 4,
    withBigInt: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withTypedArray: true,
    withSparseArray: true
  }),
  fc.string({ unit: "binary" }),
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    -1,
    0,
    -0,
    1e308,
    Number.MAX_SAFE_INTEGER + 2,
    -Number.MAX_VALUE,
    "\uD800",
    "\uDFFF\uD800",
    "__proto__",
    "constructor",
    "https://evil.example",
    null,
    undefined
  )
)

/** 500 runs: `decode` rejects arbitrary garbage (a typed error, never a throw). */
const rejectsGarbage = (decode: (input: unknown) => "ok" | "rejected") =>
  fc.assert(
    fc.property(garbage, (input) => {
      assert.strictEqual(decode(input), "rejected")
    }),
    { numRuns: 500 }
  )

/** `valid` with garbage at a random path of at most `maxLength` steps: `decode` never throws. */
const survivesGarbageAt = (
  decode: (input: unknown) => "ok" | "rejected",
  valid: unknown,
  options: { readonly maxLength: number; readonly numRuns: number }
) =>
  fc.assert(
    fc.property(fc.array(fc.nat(), { maxLength: options.maxLength }), garbage, (path, replacement) => {
      decode(mutateAt(valid, path, replacement))
    }),
    { numRuns: options.numRuns }
  )

describe("Hostile input: the command decoder", () => {
  it("arbitrary garbage: a typed error, never a throw", () => rejectsGarbage(decodeCommand))

  it("a valid command with garbage at a random path: decoded or a typed error, never a throw", () =>
    survivesGarbageAt(decodeCommand, validCommand, { maxLength: 5, numRuns: 500 }))

  /** Whether `value` has an own `__proto__` key at any depth. */
  const hasProtoKey = (value: unknown): boolean => {
    if (typeof value !== "object" || value === null) return false
    if (Object.hasOwn(value, "__proto__")) return true
    return Object.values(value).some(hasProtoKey)
  }

  it("generated valid commands round-trip; any extra field makes them a typed error", () => {
    const arbitrary = Arbitrary.make(ModelCommand.ModelCommand)
    const encode = Schema.encodeSync(ModelCommand.ModelCommand)
    fc.assert(
      fc.property(arbitrary, fc.string({ minLength: 1, maxLength: 20 }), garbage, (command, key, value) => {
        const encoded = encode(command)
        // Free-form values (provider options) may come out of the generator with a `__proto__` key,
        // which the decoder refuses anywhere in a command: such a command must be rejected.
        assert.strictEqual(decodeCommand(encoded), hasProtoKey(encoded) ? "rejected" : "ok")
        if (!(key in encoded) && key !== "__proto__") {
          assert.strictEqual(decodeCommand({ ...encoded, [key]: value }), "rejected")
        }
      }),
      { numRuns: 60 }
    )
  })

  it("oversized inputs are refused by the decoder", () => {
    const big = "x".repeat(2_000_001)
    assert.strictEqual(decodeCommand({ ...validCommand, messages: [{ _tag: "user", content: big }] }), "rejected")
    assert.strictEqual(
      decodeCommand({
        ...validCommand,
        messages: Array.from({ length: 10_001 }, () => ({ _tag: "user", content: "x" }))
      }),
      "rejected"
    )
    assert.strictEqual(decodeCommand({ ...validCommand, tenant: "t".repeat(201) }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, workflow: "w".repeat(201) }), "rejected")
    const tools = Array.from({ length: 129 }, (_, i) => ({ name: `t${i}`, description: "d", parameters: {} }))
    assert.strictEqual(decodeCommand({ ...validCommand, tools }), "rejected")
  })

  it("huge, negative, fractional and non-finite limits are refused", () => {
    for (const extra of [
      { timeout: -1 },
      { timeout: Number.NaN },
      { maxCost: 0 },
      { maxCost: -0.01 },
      { maxCost: Number.POSITIVE_INFINITY },
      { maxOutputTokens: 0 },
      { maxOutputTokens: -5 },
      { maxOutputTokens: 1.5 },
      { maxOutputTokens: 1e12 },
      { maxInputTokens: -1 },
      { step: -1 },
      { step: 0.5 }
    ]) {
      assert.strictEqual(decodeCommand({ ...validCommand, ...extra }), "rejected", JSON.stringify(extra))
    }
  })

  it("moderately deep JSON (1 000 levels) where text or parts are expected is refused", () => {
    let deep: unknown = "x"
    for (let i = 0; i < 1_000; i++) deep = [deep]
    assert.strictEqual(decodeCommand({ ...validCommand, messages: deep }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, messages: [{ _tag: "user", content: deep }] }), "rejected")
  })

  it("lone surrogates and control characters: ids refuse them, text keeps them", () => {
    assert.strictEqual(decodeCommand({ ...validCommand, tenant: "acme\uD800" }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, workflow: "ticket\uDFFF.reply" }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, tenant: "acme\u0000" }), "rejected")
    assert.strictEqual(
      decodeCommand({ ...validCommand, messages: [{ _tag: "user", content: "a\uD800b\uDFFF\u0000c" }] }),
      "ok"
    )
  })
})

describe("Hostile input: the config decoder", () => {
  it("the valid baseline decodes", () => {
    assert.strictEqual(decodeConfig(validConfig), "ok")
  })

  it("arbitrary garbage: a GatewayConfigError listing problems, never a throw", () => rejectsGarbage(decodeConfig))

  it("a valid config with garbage at a random path: decoded or a GatewayConfigError, never a throw", () =>
    survivesGarbageAt(decodeConfig, validConfig, { maxLength: 6, numRuns: 1000 }))

  it("negative and non-finite limits, prices and windows are refused", () => {
    const t = validConfig.targets[0]!
    const cases: ReadonlyArray<unknown> = [
      { ...validConfig, targets: [{ ...t, limits: { ...t.limits, maxAttempts: 0 } }] },
      { ...validConfig, targets: [{ ...t, limits: { ...t.limits, maxAttempts: -1 } }] },
      { ...validConfig, targets: [{ ...t, limits: { ...t.limits, maxAttempts: 1e9 } }] },
      { ...validConfig, targets: [{ ...t, limits: { ...t.limits, perAttemptTimeout: -100 } }] },
      { ...validConfig, targets: [{ ...t, capabilities: { ...t.capabilities, contextWindow: -1 } }] },
      { ...validConfig, targets: [{ ...t, capabilities: { ...t.capabilities, maxOutputTokens: 0.5 } }] },
      { ...validConfig, targets: [{ ...t, pricing: { ...t.pricing, inputPerMillion: -1 } }] },
      { ...validConfig, targets: [{ ...t, pricing: { ...t.pricing, outputPerMillion: Number.POSITIVE_INFINITY } }] },
      { ...validConfig, targets: [{ ...t, tokenizerSafetyFactor: 0.1 }] },
      { ...validConfig, workflows: [{ ...validConfig.workflows[0]!, timeout: -1 }] },
      { ...validConfig, workflows: [{ ...validConfig.workflows[0]!, maxCost: -1 }] },
      { ...validConfig, workflows: [{ ...validConfig.workflows[0]!, retry: { factor: 1e9 } }] }
    ]
    for (const input of cases) assert.strictEqual(decodeConfig(input), "rejected", JSON.stringify(input))
  })

  it("deeply nested JSON in a free-form field (a static degrade value) decodes without a stack overflow", () => {
    let deep: unknown = "x"
    for (let i = 0; i < 100_000; i++) deep = { a: deep }
    const input = {
      ...validConfig,
      workflows: [{ ...validConfig.workflows[0]!, degrade: { _tag: "static", value: deep } }]
    }
    decodeConfig(input)
  })
})

describe("Hostile input through the gateway: a typed error and no provider call", () => {
  const run = (input: unknown) =>
    Effect.gen(function* () {
      const command = yield* ModelCommand.decodeUnknown(input)
      const gateway = yield* ModelGateway.ModelGateway
      const fiber = yield* Effect.fork(Effect.exit(gateway.generate(command)))
      yield* TestClock.adjust(5_000)
      const exit = yield* Fiber.join(fiber)
      const attempts = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      return { exit, attempts }
    })

  it.effect("an unknown workflow, a too-large input, a region outside the policy", () =>
    Effect.gen(function* () {
      for (const input of [
        { ...validCommand, workflow: "no.such.workflow" },
        { ...validCommand, maxInputTokens: 3 },
        { ...validCommand, regions: ["mars"] }
      ]) {
        const { exit, attempts } = yield* run(input)
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
        assert.strictEqual(error?._tag, "InvalidRequest", JSON.stringify(input))
        assert.deepStrictEqual(attempts, [])
      }
    }).pipe(Effect.provide(gatewayLayer({})))
  )

  it.effect("lone surrogates in the prompt: tokenized and sent like any text (no crash)", () =>
    Effect.gen(function* () {
      const { exit, attempts } = yield* run({
        ...validCommand,
        messages: [{ _tag: "user", content: "a\uD800b\uDFFFc" }]
      })
      assert.isTrue(Exit.isSuccess(exit))
      assert.deepStrictEqual(
        attempts.map((a) => a.target),
        [refs.primary]
      )
    }).pipe(Effect.provide(gatewayLayer({})))
  )

  // Tool parameter schemas are free-form JSON: the decoder bounds their depth, and a command built in
  // code (bypassing the decoder) that cannot even be measured is refused by the router, never a defect.
  it.effect("deeply nested tool parameters: a typed error, no provider call", () =>
    Effect.gen(function* () {
      let deep: unknown = {}
      for (let i = 0; i < 100_000; i++) deep = { a: deep }
      const tools = [{ name: "t", description: "d", parameters: { type: "object", x: deep } }]
      assert.strictEqual(decodeCommand({ ...validCommand, tools }), "rejected")
      const built = new ModelCommand.ModelCommand({
        ...Schema.decodeUnknownSync(ModelCommand.ModelCommand)(validCommand),
        tools: [
          new ModelCommand.ToolDefinition({ name: "t", description: "d", parameters: { type: "object", x: deep } })
        ]
      })
      const gateway = yield* ModelGateway.ModelGateway
      const exit = yield* Effect.exit(gateway.generate(built))
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      assert.strictEqual(error?._tag, "InvalidRequest", "a typed failure, not a defect")
      assert.deepStrictEqual(yield* (yield* ScriptedProvider.ScriptedProvider).attempts, [])
    }).pipe(Effect.provide(gatewayLayer({})))
  )
})

// ---------------------------------------------------------------------------------------------
// Shapes that once got past `ModelCommand.decodeUnknown` as throws, stack overflows or value echoes;
// the decoder now checks the raw shape first (plain objects, bounded depth and size) and reports
// paths and kinds only.
// ---------------------------------------------------------------------------------------------

describe("Hostile input: exotic shapes and decoder errors", () => {
  it("a null-prototype object as a whole message is refused", () => {
    assert.strictEqual(decodeCommand({ ...validCommand, messages: [Object.create(null)] }), "rejected")
  })

  it("a null-prototype object as a message's `_tag` (querystring parsers make them): a typed error, not a throw", () => {
    assert.strictEqual(
      decodeCommand({ ...validCommand, messages: [{ _tag: Object.create(null), content: "x" }] }),
      "rejected"
    )
  })

  it("100 000 levels of nesting: the ParseError message renders without a stack overflow", () => {
    let deep: unknown = "x"
    for (let i = 0; i < 100_000; i++) deep = [deep]
    assert.strictEqual(decodeCommand({ ...validCommand, messages: [{ _tag: "user", content: deep }] }), "rejected")
  })

  it("the decode error names paths and kinds only, never the offending (prompt) value", () => {
    const exit = Effect.runSyncExit(
      ModelCommand.decodeUnknown({ ...validCommand, messages: [{ _tag: "user", content: ["zqxcanary-prompt"] }] })
    )
    assert.isTrue(Exit.isFailure(exit))
    assert.notInclude(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "", "zqxcanary")
  })
})

// ---------------------------------------------------------------------------------------------
// Field caps of a command (issue 12, item 5): absurd sizes are refused by the decoder (and by the
// class constructor), the error names the field and the limit, never the value, and what reaches a
// route decision is bounded.
// ---------------------------------------------------------------------------------------------

/** The message of the decoder's ParseError for `input` (throws when it decodes). */
const rejectionOf = (input: unknown): string => {
  const exit = Effect.runSyncExit(ModelCommand.decodeUnknown(input))
  if (Exit.isSuccess(exit)) throw new Error("expected a rejection")
  return Cause.pretty(exit.cause)
}

describe("Hostile input: field caps of a command", () => {
  const regions = (n: number, length = 2) => Array.from({ length: n }, (_, i) => `r${i}`.padEnd(length, "x"))

  it("regions: at most 32 entries of at most 64 characters; dataClass at most 64 characters", () => {
    assert.strictEqual(decodeCommand({ ...validCommand, regions: regions(32, 64) }), "ok")
    assert.strictEqual(decodeCommand({ ...validCommand, regions: regions(33) }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, regions: regions(500_000) }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, regions: ["e".repeat(65)] }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, dataClass: "c".repeat(64) }), "ok")
    assert.strictEqual(decodeCommand({ ...validCommand, dataClass: "c".repeat(65) }), "rejected")
    assert.strictEqual(decodeCommand({ ...validCommand, dataClass: "c".repeat(5_000_000) }), "rejected")
  })

  it("tool result names, image media types and requested schema features are capped too", () => {
    const toolMessage = (name: string) => ({
      ...validCommand,
      messages: [
        { _tag: "user", content: "x" },
        { _tag: "tool", toolCallId: "c1", name, content: "{}" }
      ]
    })
    assert.strictEqual(decodeCommand(toolMessage("lookup")), "ok")
    assert.strictEqual(decodeCommand(toolMessage("n".repeat(65))), "rejected")
    const image = (mediaType: string) => ({
      ...validCommand,
      messages: [{ _tag: "user", content: [{ _tag: "image", url: "https://example.com/a.png", mediaType }] }]
    })
    assert.strictEqual(decodeCommand(image("image/png")), "ok")
    assert.strictEqual(decodeCommand(image(`image/${"x".repeat(100)}`)), "rejected")
    const features = (n: number) => ({
      ...validCommand,
      requires: { schemaFeatures: Array.from({ length: n }, () => "enum") }
    })
    assert.strictEqual(decodeCommand(features(32)), "ok")
    assert.strictEqual(decodeCommand(features(33)), "rejected")
  })

  it("the rejection names the field and the limit, never the value", () => {
    const canary = "zqxcanary"
    const tooMany = rejectionOf({ ...validCommand, regions: regions(33).map((r) => `${canary}${r}`) })
    assert.include(tooMany, "$.regions")
    assert.include(tooMany, "32")
    assert.notInclude(tooMany, canary)
    const tooLong = rejectionOf({ ...validCommand, dataClass: `${canary}${"c".repeat(100)}` })
    assert.include(tooLong, "$.dataClass")
    assert.include(tooLong, "64")
    assert.notInclude(tooLong, canary)
    // a hostile key is named by a bounded path
    const key = rejectionOf({ ...validCommand, [`${canary}${"k".repeat(10_000)}`]: 1 })
    assert.isBelow(key.length, 2_000)
  })

  it("a __proto__ key anywhere in a command is refused (decoded, it would become a prototype)", () => {
    const json = (parameters: string) =>
      JSON.parse(
        `{"workflow": "ticket.reply", "tenant": "acme", "messages": [{"_tag": "user", "content": "x"}], "tools": [{"name": "t", "description": "d", "parameters": ${parameters}}]}`
      )
    assert.strictEqual(decodeCommand(json('{"type": "object"}')), "ok")
    assert.strictEqual(decodeCommand(json('{"type": "object", "__proto__": {"x": 1}}')), "rejected")
    assert.strictEqual(decodeCommand(JSON.parse('{"__proto__": {"workflow": "ticket.reply"}}')), "rejected")
  })

  it("a command built in code is held to the same caps", () => {
    const base = Schema.decodeUnknownSync(ModelCommand.ModelCommand)(validCommand)
    const [first, ...rest] = regions(33)
    assert.throws(() => new ModelCommand.ModelCommand({ ...base, regions: [first!, ...rest] }))
    assert.throws(() => new ModelCommand.ModelCommand({ ...base, dataClass: "c".repeat(65) }))
  })

  it("an excluded target's detail is bounded and marked as truncated", () => {
    const detail = `runs in [us], allowed [${Array.from({ length: 100_000 }, () => "eu").join(", ")}]`
    const excluded = new RouteDecision.ExcludedTarget(
      { target: TargetRef.make(refs.us), reason: "DATA_REGION_MISMATCH", detail },
      { disableValidation: true }
    )
    assert.isAtMost(excluded.detail.length, maxDetailLength)
    assert.isTrue(excluded.detail.endsWith("…(truncated)"))
    assert.isTrue(excluded.detail.startsWith("runs in [us], allowed [eu, eu"))
    const decoded = Schema.decodeUnknownSync(RouteDecision.ExcludedTarget)({
      target: refs.us,
      reason: "DATA_REGION_MISMATCH",
      detail
    })
    assert.isAtMost(decoded.detail.length, maxDetailLength)
    const short = new RouteDecision.ExcludedTarget({ target: TargetRef.make(refs.us), reason: "DISABLED", detail: "x" })
    assert.strictEqual(short.detail, "x")
  })

  it.effect("a command built without validation: the route decision's details stay bounded", () =>
    Effect.gen(function* () {
      const base = Schema.decodeUnknownSync(ModelCommand.ModelCommand)({
        ...validCommand,
        workflow: "ticket.summarize"
      })
      const allowed: [string, ...Array<string>] = ["eu", ...Array.from({ length: 100_000 }, () => "eu")]
      const command = new ModelCommand.ModelCommand({ ...base, regions: allowed }, { disableValidation: true })
      const gateway = yield* ModelGateway.ModelGateway
      const route = yield* gateway.router.resolve(command)
      assert.deepStrictEqual(exclusionsOf(route.decision), [[refs.us, "DATA_REGION_MISMATCH"]])
      for (const e of route.decision.excluded) assert.isAtMost(e.detail.length, maxDetailLength)
    }).pipe(Effect.provide(gatewayLayer({})))
  )
})
