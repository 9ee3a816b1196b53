import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Effect, Exit, Fiber, Layer, Option, ParseResult, TestClock } from "effect"
import { inspect } from "node:util"
import { providers, refs, target, targets, workflow, workflows, definitionOf, exclusionsOf } from "./fixtures.js"

const valid = {
  workflow: "ticket.reply",
  tenant: "acme",
  messages: [{ _tag: "user", content: "hello" }]
}

/** The decode failure, rendered as a caller would see it. */
const rejection = (input: unknown): string | undefined => {
  const exit = Effect.runSyncExit(ModelCommand.decodeUnknown(input))
  if (Exit.isSuccess(exit)) return undefined
  const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
  assert.isTrue(ParseResult.isParseError(error), "a typed ParseError, not a defect")
  return error!.message
}

describe("Security: a command names a workflow and requirements only", () => {
  it("the valid baseline decodes", () => {
    assert.isUndefined(rejection(valid))
  })

  it.each([
    ["baseUrl", "https://evil.example/v1"],
    ["apiKey", "sk-attacker"],
    ["target", "model://openai/small@eu"],
    ["provider", "openai"],
    ["model", "gpt-5"],
    ["endpoint", "https://evil.example"],
    ["credentials", { key: "x" }],
    ["headers", { authorization: "Bearer x" }],
    ["deployment", "other-tenant-deployment"],
    ["route", ["model://gemini/flash@us"]]
  ] as const)("an unknown top-level field `%s` is rejected, naming the field", (field, value) => {
    const message = rejection({ ...valid, [field]: value })
    assert.isDefined(message)
    assert.include(message!, field)
    assert.include(message!, "is unexpected")
  })

  it.each([
    [
      "a message",
      { ...valid, messages: [{ _tag: "user", content: "hi", baseUrl: "https://evil.example" }] },
      "baseUrl"
    ],
    [
      "a tool",
      {
        ...valid,
        tools: [{ name: "t", description: "d", parameters: { type: "object" }, endpoint: "https://evil.example" }]
      },
      "endpoint"
    ],
    ["the requirements", { ...valid, requires: { streaming: true, target: "model://gemini/flash@us" } }, "target"],
    [
      "a content part",
      { ...valid, messages: [{ _tag: "user", content: [{ _tag: "text", text: "x", apiKey: "k" }] }] },
      "apiKey"
    ]
  ] as const)("an unknown field nested in %s is rejected", (_, input, field) => {
    const message = rejection(input)
    assert.isDefined(message)
    assert.include(message!, field)
  })

  it.each([
    "https://evil.example/v1/chat/completions",
    "model://openai/small@eu",
    "http://169.254.169.254/latest/meta-data",
    "../other-workflow",
    "ticket.reply/../../admin",
    "ticket.reply?baseUrl=https://evil.example",
    "ticket reply",
    "",
    " ticket.reply"
  ])("a URL, target ref or path where a workflow name belongs is rejected: %j", (name) => {
    assert.isDefined(rejection({ ...valid, workflow: name }))
  })

  it.each(["https://evil.example", "acme/../globex", "acme\r\nx-api-key: stolen", "", "a".repeat(201), "acme globex"])(
    "a tenant id that is not an id is rejected: %j",
    (tenant) => {
      assert.isDefined(rejection({ ...valid, tenant }))
    }
  )

  it("images only by data: URL or https (no file:, no plain http to internal hosts)", () => {
    for (const url of ["file:///etc/passwd", "http://169.254.169.254/", "javascript:alert(1)", "ftp://x"]) {
      const input = { ...valid, messages: [{ _tag: "user", content: [{ _tag: "image", url }] }] }
      assert.isDefined(rejection(input), url)
    }
  })
})

// ---------------------------------------------------------------------------------------------
// Availability fallback never widens region, data class or permissions: the attack view
// ---------------------------------------------------------------------------------------------

/**
 * The registry holds a US target that only accepts data class `usonly` and serves only the
 * `ticket.summarize` workflow (EU+US). An attacker crafts commands for the EU-only workflows so
 * that only that target would look eligible.
 */
const usOnly = target("model://gemini/pro@us", "gemini", { regions: ["us"], dataClasses: ["usonly", "internal"] })
const attackDefinition: GatewayConfig.Definition = definitionOf({
  targets: [...targets, usOnly],
  workflows: [...workflows, workflow({ name: "us.summary", regions: ["eu", "us"], route: [refs.primary, usOnly.ref] })]
})

const attackLayer = (scripts: ScriptedProvider.Scripts) =>
  ModelGateway.layer(attackDefinition).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
    )
  )

const decode = (input: unknown) => Effect.runSync(ModelCommand.decodeUnknown(input))

const attempt = (input: unknown) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const fiber = yield* Effect.fork(Effect.exit(gateway.generate(decode(input))))
    yield* TestClock.adjust(5_000)
    const exit = yield* Fiber.join(fiber)
    const attempts = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
    const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    return { exit, error, attempted: attempts.map((a) => a.target) }
  })

/** One attack: `input` against the attack gateway over `scripts`; `check` reads the failure and what was tried. */
const attackTest = (
  name: string,
  input: unknown,
  scripts: ScriptedProvider.Scripts,
  check: (outcome: Effect.Effect.Success<ReturnType<typeof attempt>>) => void
) => it.effect(name, () => Effect.map(attempt(input), check).pipe(Effect.provide(attackLayer(scripts))))

describe("Security: no command makes a forbidden target eligible", () => {
  it.effect.each([
    { name: "regions outside the workflow's (the only region the forbidden target has)", regions: ["us"] },
    { name: "regions widened to include the forbidden region", regions: ["eu", "us"] }
  ])("$name: refused before any call", ({ regions }) =>
    Effect.gen(function* () {
      const { error, attempted } = yield* attempt({ ...valid, regions })
      assert.strictEqual(error?._tag, "InvalidRequest")
      assert.strictEqual(error?._tag === "InvalidRequest" ? error.reason : undefined, "invalid_command")
      assert.deepStrictEqual(attempted, [])
    }).pipe(Effect.provide(attackLayer({})))
  )

  attackTest(
    "a data class only the forbidden target accepts: no eligible route, nothing called, it is not even listed",
    { ...valid, dataClass: "usonly" },
    {},
    ({ error, attempted }) => {
      assert.strictEqual(error?._tag, "NoEligibleRoute")
      if (error?._tag === "NoEligibleRoute") {
        assert.deepStrictEqual(exclusionsOf(error), [
          [refs.primary, "DATA_CLASS_NOT_ALLOWED"],
          [refs.fallback, "DATA_CLASS_NOT_ALLOWED"]
        ])
      }
      assert.deepStrictEqual(attempted, [])
    }
  )

  attackTest(
    "every route down and a data class downgraded: only the workflow's route is tried, never another target",
    { ...valid, dataClass: "public" },
    {
      [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
      [refs.fallback]: [ScriptedProvider.unavailable({ after: 10 })],
      [usOnly.ref]: [ScriptedProvider.success({ after: 10 })]
    },
    ({ error, attempted }) => {
      assert.strictEqual(error?._tag, "ProviderUnavailable")
      assert.isAbove(attempted.length, 0)
      for (const t of attempted) assert.include([refs.primary, refs.fallback], t)
    }
  )

  attackTest(
    "an EU+US workflow narrowed to EU with the EU target down: PolicyViolation, the US target is never called",
    { ...valid, workflow: "us.summary", regions: ["eu"] },
    {
      [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
      [usOnly.ref]: [ScriptedProvider.success({ after: 10 })]
    },
    ({ error, attempted }) => {
      assert.strictEqual(error?._tag, "PolicyViolation")
      assert.notInclude(attempted, usOnly.ref)
      assert.deepStrictEqual([...new Set(attempted)], [refs.primary])
    }
  )

  it("a configuration that routes an EU workflow to a US target or a target refusing its data class does not start", () => {
    const exit = Effect.runSyncExit(
      Effect.scoped(
        Layer.build(
          ModelGateway.layer({
            ...attackDefinition,
            config: GatewayConfig.GatewayConfig.make({
              targets: [...targets, usOnly],
              workflows: [
                workflow({ name: "eu.only", route: [refs.primary, usOnly.ref] }),
                workflow({ name: "secret.stuff", dataClass: "secret", route: [refs.primary] })
              ]
            })
          }).pipe(Layer.provide(ScriptedProvider.layer({ providers, scripts: {} })), ModelGateway.withDefaults())
        )
      )
    )
    assert.isTrue(Exit.isFailure(exit))
    const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    assert.strictEqual(error?._tag, "GatewayConfigError")
    const reasons = error?._tag === "GatewayConfigError" ? error.problems.map((p) => `${p.workflow}:${p.reason}`) : []
    assert.include(reasons, "eu.only:DATA_REGION_MISMATCH")
    assert.include(reasons, "secret.stuff:DATA_CLASS_NOT_ALLOWED")
  })
})

describe("Security: secrets in configuration", () => {
  it.effect("a key pasted into the gateway config is refused, and the error does not echo it", () =>
    Effect.gen(function* () {
      const secret = "sk-canarysecret-1234"
      const json = {
        targets: [
          {
            ref: "model://openai/small@eu",
            provider: "openai",
            model: "small",
            apiKey: secret,
            baseUrl: `https://${secret}@evil.example`,
            capabilities: { contextWindow: 1000, maxOutputTokens: 100 },
            regions: ["eu"],
            dataClasses: ["internal"],
            pricing: { inputPerMillion: 1, outputPerMillion: 1, pricingVersion: "p" }
          }
        ],
        workflows: []
      }
      const error = yield* Effect.flip(GatewayConfig.decode(json))
      assert.strictEqual(error._tag, "GatewayConfigError")
      const paths = error.problems.map((p) => p.path)
      assert.include(paths, "targets[0].apiKey")
      assert.include(paths, "targets[0].baseUrl")
      for (const text of [error.message, String(error), JSON.stringify(error), inspect(error, { depth: 20 })]) {
        assert.notInclude(text, "canarysecret")
      }
    })
  )
})
