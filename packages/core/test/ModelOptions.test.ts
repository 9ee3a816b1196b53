/**
 * Sampling and provider options: the workflow's bounds and the command's overrides, startup
 * validation of pinned options and provider options, request-time exclusion, what reaches the
 * adapter, and what evidence records.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, GatewayConfig, ModelGateway } from "@modelgate/core"
import type { GatewayError } from "@modelgate/core/Errors"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import * as ModelOptions from "@modelgate/core/ModelOptions"
import { Capabilities, ModelTarget, TargetRef } from "@modelgate/core/ModelTarget"
import { Usage } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Cause, Effect, Either, Exit, Layer, Option, Schema, Stream } from "effect"
import * as Options from "../src/internal/options.js"
import { command, servicesBudgeted, target, workflow } from "./fixtures.js"

const refs = {
  classic: TargetRef.make("model://openai/classic@eu"),
  reasoning: TargetRef.make("model://openai/thinker@eu"),
  claude: TargetRef.make("model://anthropic/claude@eu")
}

const withOptions = (t: ModelTarget, options: ReadonlyArray<ModelOptions.OptionName>): ModelTarget =>
  new ModelTarget({ ...t, capabilities: new Capabilities({ ...t.capabilities, options }) })

const classic = withOptions(target(refs.classic, "openai"), ["temperature", "topP", "seed", "stop", "userId"])
const reasoning = withOptions(target(refs.reasoning, "openai"), ["reasoningEffort", "seed"])
const claude = withOptions(target(refs.claude, "anthropic"), ["temperature", "topP", "stop", "reasoningBudget"])

/** A provider option allowlist like an adapter's. */
const allowlist: ModelOptions.ProviderOptionsAllowlist = {
  service_tier: Schema.Literal("auto", "flex"),
  top_k: Schema.Int.pipe(Schema.between(1, 100)),
  // Deliberately sloppy: the core refuses these whatever an adapter allows.
  api_key: Schema.String,
  model: Schema.String
}

const answer = {
  text: "ok",
  toolCalls: [],
  finishReason: "stop" as const,
  refusal: false,
  usage: new Usage({ inputTokens: 10, outputTokens: 5 }),
  modelVersion: undefined,
  requestId: undefined,
  httpStatus: 200
}

/** Adapters that answer at once and keep every request they get. */
const capturing = () => {
  const seen: Array<ProviderAdapter.ProviderRequest> = []
  const adapter = (providerOptions?: ModelOptions.ProviderOptionsAllowlist) =>
    Effect.succeed({
      generate: (request: ProviderAdapter.ProviderRequest) =>
        Effect.sync(() => {
          seen.push(request)
          return answer
        }),
      stream: (request: ProviderAdapter.ProviderRequest) =>
        Stream.suspend(() => {
          seen.push(request)
          return Stream.fromIterable<ProviderAdapter.ProviderStreamEvent>([
            { _tag: "Started", requestId: undefined, httpStatus: 200 },
            { _tag: "TextDelta", text: "ok" },
            { _tag: "Finish", finishReason: "stop", refusal: false, usage: answer.usage, modelVersion: undefined }
          ])
        }),
      ...(providerOptions !== undefined ? { providerOptions } : {})
    })
  const layer = Layer.mergeAll(
    ProviderAdapter.layer("openai", adapter(allowlist)),
    ProviderAdapter.layer("anthropic", adapter())
  )
  return { seen, layer }
}

const definition = (
  workflows: ReadonlyArray<ReturnType<typeof workflow>>,
  targets: ReadonlyArray<ModelTarget> = [classic, reasoning, claude]
): GatewayConfig.Definition => ({ config: GatewayConfig.GatewayConfig.make({ targets, workflows }) })

const gateway = (def: GatewayConfig.Definition, adapters: Layer.Layer<ProviderAdapter.ProviderAdapter>) =>
  ModelGateway.layer(def).pipe(Layer.provideMerge(adapters), Layer.provideMerge(servicesBudgeted(10)))

/** A gateway over `workflows` (the default targets) whose adapters answer at once; the requests they got. */
const capturingGateway = (workflows: ReadonlyArray<ReturnType<typeof workflow>>) => {
  const { seen, layer } = capturing()
  return { seen, layer: gateway(definition(workflows), layer) }
}

const bounded = workflow({
  name: "reply.bounded",
  route: [refs.classic],
  options: { temperature: { default: 0.2, min: 0, max: 1 }, stop: { overridable: false } }
})

/** The failure of `effect`, which must fail. */
const failureOf = <A>(effect: Effect.Effect<A, GatewayError, ModelGateway.ModelGateway>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit))
    return Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
  })

const problemsOf = (def: GatewayConfig.Definition, providerOptions = new Map([["openai", allowlist]])) =>
  GatewayConfig.validate(def, new Set(["openai", "anthropic"]), { providerOptions })

describe("ModelOptions.resolve: the workflow's bounds and the command's overrides", () => {
  const bounds = {
    options: {
      temperature: { default: 0.2, min: 0, max: 1 },
      seed: 7,
      reasoningEffort: { allowed: ["low", "medium"] as const },
      parallelToolCalls: { default: true },
      stop: { default: ["END"], overridable: false }
    }
  } satisfies { readonly options: ModelOptions.WorkflowOptions }

  it("defaults apply, pinned options are required, an override inside the bounds wins", () => {
    const none = Options.resolve(bounds, {})
    assert.deepStrictEqual(Either.getOrThrow(none).values, {
      temperature: 0.2,
      seed: 7,
      stop: ["END"],
      parallelToolCalls: true
    })
    assert.deepStrictEqual(Either.getOrThrow(none).required, ["seed", "stop"])
    const inside = Either.getOrThrow(Options.resolve(bounds, { options: { temperature: 0.9, seed: 7 } }))
    assert.deepStrictEqual(inside.values, { temperature: 0.9, seed: 7, stop: ["END"], parallelToolCalls: true })
    assert.deepStrictEqual(inside.required, ["temperature", "seed", "stop"])
    const chosen = Either.getOrThrow(Options.resolve(bounds, { options: { reasoningEffort: "medium" } }))
    assert.strictEqual(chosen.values.reasoningEffort, "medium")
  })

  it.each([
    [{ temperature: 1.5 }, "options.temperature is above the workflow's maximum of 1"],
    [{ seed: 8 }, "options.seed is pinned by the workflow to 7"],
    [
      { reasoningEffort: "high" as const },
      "options.reasoningEffort is not among the workflow's allowed values [low, medium]"
    ],
    [{ stop: ["STOP"] }, "options.stop is fixed by the workflow"]
  ])("an override outside the bounds is refused, naming the option and the bound (%j)", (options, message) => {
    const resolved = Options.resolve(bounds, { options })
    assert.deepStrictEqual(resolved, Either.left(message))
  })

  it("a minimum is enforced, and several problems are listed together without the values", () => {
    const resolved = Options.resolve(
      { options: { temperature: { min: 0.5 }, topP: { max: 0.9 } } },
      { options: { temperature: 0.123456, topP: 0.987654 } }
    )
    assert.deepStrictEqual(
      resolved,
      Either.left(
        "options.temperature is below the workflow's minimum of 0.5; options.topP is above the workflow's maximum of 0.9"
      )
    )
  })

  it("without workflow bounds a command's options are all required; nothing set resolves to `none`", () => {
    assert.strictEqual(Either.getOrThrow(Options.resolve({}, {})), Options.none)
    const r = Either.getOrThrow(Options.resolve({}, { options: { topP: 0.5, userId: "u-1" } }))
    assert.deepStrictEqual(r.required, ["topP", "userId"])
  })

  it("forTarget drops the workflow defaults a target does not accept, and only those", () => {
    const r = Either.getOrThrow(Options.resolve(bounds, {}))
    assert.strictEqual(Options.forTarget(r, ["temperature", "seed", "stop", "parallelToolCalls"]), r.values)
    assert.deepStrictEqual(Options.forTarget(r, ["seed"]), { seed: 7 })
  })

  it("the pinned options and the bounds' own problems", () => {
    assert.deepStrictEqual(Options.pinned(bounds.options), ["seed", "stop"])
    assert.deepStrictEqual(
      Options.boundsProblems({
        temperature: { default: 1.5, min: 0, max: 1 },
        topP: { min: 0.9, max: 0.5 },
        reasoningEffort: { default: "high", allowed: ["low"] }
      }),
      [
        ["temperature", "default is above max"],
        ["topP", "min is above max"],
        ["reasoningEffort", "default is not among the allowed values"]
      ]
    )
  })
})

describe("ModelOptions.providerOptionsProblems: the allowlist", () => {
  it.each([
    ["baseURL", "https://evil.example", "may not carry a URL, key or header"],
    ["endpoint", "https://evil.example", "may not carry a URL, key or header"],
    ["base_url", "https://evil.example", "may not carry a URL, key or header"],
    ["api_key", "sk-attacker", "may not carry a URL, key or header"],
    ["headers", { authorization: "Bearer x" }, "may not carry a URL, key or header"],
    ["model", "gpt-other", "owned by the gateway"],
    ["messages", [], "owned by the gateway"],
    ["max_tokens", 10, "owned by the gateway"],
    ["stream", true, "owned by the gateway"],
    ["tools", [], "owned by the gateway"],
    ["response_format", { type: "text" }, "owned by the gateway"],
    ["temperature", 1, "owned by the gateway"],
    ["unknown_field", 1, "not an allowed field"]
  ] as const)("`%s` is refused (%s)", (field, value, problem) => {
    const problems = ModelOptions.providerOptionsProblems("openai", { [field]: value }, allowlist)
    assert.deepStrictEqual(problems, [`openai.${field}: ${problem}`])
    // Value-free: a URL or key given as the value never appears in the problem.
    if (typeof value === "string") assert.notInclude(problems.join(), value)
  })

  it("an allowed field with a valid value passes; an invalid value or a nested URL key does not", () => {
    assert.deepStrictEqual(
      ModelOptions.providerOptionsProblems("openai", { service_tier: "flex", top_k: 5 }, allowlist),
      []
    )
    assert.deepStrictEqual(ModelOptions.providerOptionsProblems("openai", { top_k: 500 }, allowlist), [
      "openai.top_k: invalid value"
    ])
    const nested: ModelOptions.ProviderOptionsAllowlist = { extra: Schema.Unknown }
    assert.deepStrictEqual(
      ModelOptions.providerOptionsProblems("x", { extra: { a: [{ callbackUrl: "u" }] } }, nested),
      ["x.extra: may not carry a URL, key or header"]
    )
    assert.deepStrictEqual(ModelOptions.providerOptionsProblems("x", { extra: 1 }, undefined), [
      "x.extra: not an allowed field"
    ])
  })
})

describe("a command's options are decoded with their ranges, value-free", () => {
  const valid = { workflow: "ticket.reply", tenant: "acme", messages: [{ _tag: "user", content: "hi" }] }
  const decode = (input: unknown) => Effect.runSyncExit(ModelCommand.decodeUnknown(input))

  it("a command with temperature is accepted", () => {
    const exit = decode({ ...valid, options: { temperature: 0.3, stop: ["\n\n"], reasoningEffort: "low" } })
    assert.isTrue(Exit.isSuccess(exit))
    if (Exit.isSuccess(exit))
      assert.deepStrictEqual(exit.value.options, { temperature: 0.3, stop: ["\n\n"], reasoningEffort: "low" })
  })

  it.each([
    [{ options: { temperature: 7.25 } }, "$.options.temperature"],
    [{ options: { stop: ["a", "b", "c", "d", "e"] } }, "$.options.stop"],
    [{ options: { userId: "someone@example.com" } }, "$.options.userId"],
    [{ options: { topK: 3 } }, "$.options.topK"],
    [{ providerOptions: { openai: { "bad key": "someone@example.com" } } }, "$.providerOptions.openai"]
  ])("%j is refused at its path, without the value", (extra, path) => {
    const exit = decode({ ...valid, ...extra })
    assert.isTrue(Exit.isFailure(exit))
    if (Exit.isSuccess(exit)) return
    const message = String(Option.getOrUndefined(Cause.failureOption(exit.cause))?.message)
    assert.include(message, path)
    for (const value of ["7.25", "someone@example.com"]) assert.notInclude(message, value)
  })
})

describe("startup validation", () => {
  it("a pinned option a route target cannot honour is listed (OPTION_UNSUPPORTED)", () => {
    const problems = problemsOf(
      definition([
        workflow({ name: "pinned", route: [refs.classic, refs.reasoning], options: { temperature: 0.2, seed: 1 } })
      ])
    )
    assert.deepStrictEqual(
      problems.map((p) => ({ ...p })),
      [
        {
          path: "workflows[0].route[1]",
          workflow: "pinned",
          target: refs.reasoning,
          reason: "OPTION_UNSUPPORTED",
          detail: "does not accept options: temperature",
          fix: `the target accepts options ["reasoningEffort", "seed"]: remove the pin from the workflow's options, or the target from the route`
        }
      ]
    )
  })

  it("a default (not pinned) the reasoning target lacks is not a problem; inconsistent bounds are", () => {
    assert.deepStrictEqual(
      problemsOf(
        definition([
          workflow({ name: "soft", route: [refs.classic, refs.reasoning], options: { temperature: { default: 0.2 } } })
        ])
      ),
      []
    )
    const problems = problemsOf(
      definition([workflow({ name: "bad", route: [refs.classic], options: { temperature: { default: 2, max: 1 } } })])
    )
    assert.deepStrictEqual(
      problems.map((p) => [p.path, p.reason, p.detail]),
      [["workflows[0].options.temperature", "INVALID_OPTION_BOUNDS", "default is above max"]]
    )
  })

  it("workflow provider options: the adapter's allowlist, and a provider of the route", () => {
    const problems = problemsOf(
      definition([
        workflow({
          name: "hatch",
          route: [refs.classic],
          providerOptions: {
            openai: { service_tier: "flex", baseURL: "https://evil.example", api_key: "k", model: "m" },
            gemini: { topK: 3 }
          }
        })
      ])
    )
    assert.deepStrictEqual(
      problems.map((p) => [p.path, p.reason, p.detail]),
      [
        [
          "workflows[0].providerOptions.openai",
          "PROVIDER_OPTION_NOT_ALLOWED",
          "openai.baseURL: may not carry a URL, key or header"
        ],
        [
          "workflows[0].providerOptions.openai",
          "PROVIDER_OPTION_NOT_ALLOWED",
          "openai.api_key: may not carry a URL, key or header"
        ],
        ["workflows[0].providerOptions.openai", "PROVIDER_OPTION_NOT_ALLOWED", "openai.model: owned by the gateway"],
        ["workflows[0].providerOptions.gemini", "PROVIDER_OPTIONS_UNUSED", "no target of the route uses this provider"]
      ]
    )
    for (const p of problems) assert.notInclude(p.toString(), "evil.example")
  })

  it.effect("the gateway refuses to start with a pinned option its route cannot honour", () =>
    Effect.gen(function* () {
      const { layer } = capturing()
      const def = definition([workflow({ name: "pinned", route: [refs.reasoning], options: { temperature: 0 } })])
      const error = yield* Effect.flip(Layer.build(gateway(def, layer)).pipe(Effect.scoped))
      assert.strictEqual(error._tag, "GatewayConfigError")
      assert.deepStrictEqual(error._tag === "GatewayConfigError" ? error.problems.map((p) => p.reason) : [], [
        "OPTION_UNSUPPORTED"
      ])
    })
  )
})

describe("through the gateway", () => {
  it.effect("a command with temperature is accepted; the adapter gets the options, evidence records them", () => {
    const { seen, layer } = capturingGateway([bounded])
    return Effect.gen(function* () {
      const result = yield* ModelGateway.generate(
        command("reply.bounded", { options: { temperature: 0.7, seed: 3, userId: "user-42" } })
      )
      assert.strictEqual(seen.length, 1)
      assert.deepStrictEqual(seen[0]?.options, { temperature: 0.7, seed: 3, userId: "user-42" })
      assert.isUndefined(seen[0]?.providerOptions)
      assert.deepStrictEqual(result.evidence.options, { temperature: 0.7, seed: 3, userId: "set" })
      // Streams carry them the same way.
      yield* Stream.runDrain(ModelGateway.stream(command("reply.bounded", { options: { topP: 0.5 } })))
      assert.deepStrictEqual(seen[1]?.options, { temperature: 0.2, topP: 0.5 })
      const records = yield* CallRecorder.MemoryRecorder.pipe(Effect.flatMap((m) => m.records))
      assert.deepStrictEqual(records[0]?.evidence.options, { temperature: 0.7, seed: 3, userId: "set" })
      assert.deepStrictEqual(records[1]?.evidence.options, { temperature: 0.2, topP: 0.5 })
      assert.notInclude(JSON.stringify(records), "user-42")
    }).pipe(Effect.provide(layer))
  })

  it.effect("an override outside the bounds is InvalidRequest before any reservation or attempt", () => {
    const { seen, layer } = capturingGateway([bounded])
    return Effect.gen(function* () {
      const error = yield* failureOf(
        ModelGateway.generate(command("reply.bounded", { options: { temperature: 1.75 } }))
      )
      assert.deepInclude(error, {
        _tag: "InvalidRequest",
        reason: "invalid_command",
        detail: "options.temperature is above the workflow's maximum of 1"
      })
      assert.notInclude(JSON.stringify(error), "1.75")
      assert.strictEqual(seen.length, 0)
      const balance = yield* Effect.flatMap(Budgets.Budgets, (b) => b.balance(ModelCommand.TenantId.make("acme")))
      assert.deepInclude(balance, { committed: 0, reserved: 0 })
      const records = yield* CallRecorder.MemoryRecorder.pipe(Effect.flatMap((m) => m.records))
      assert.strictEqual(records[0]?.evidence.cost.reserved, 0)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a target that cannot honour an option the command sets is excluded (OPTION_UNSUPPORTED)", () => {
    const wf = workflow({ name: "reply.mixed", route: [refs.reasoning, refs.classic] })
    const { seen, layer } = capturingGateway([wf])
    return Effect.gen(function* () {
      const result = yield* ModelGateway.generate(command("reply.mixed", { options: { temperature: 0.4 } }))
      assert.strictEqual(result.evidence.target, refs.classic)
      assert.deepStrictEqual(
        result.evidence.excluded.map((e) => ({ ...e })),
        [{ target: refs.reasoning, reason: "OPTION_UNSUPPORTED", detail: "does not accept options: temperature" }]
      )
      assert.deepStrictEqual(
        seen.map((r) => r.target.ref),
        [refs.classic]
      )
      // Without options the reasoning target is first again.
      const plain = yield* ModelGateway.generate(command("reply.mixed"))
      assert.strictEqual(plain.evidence.target, refs.reasoning)
      assert.deepStrictEqual(plain.evidence.excluded, [])
      assert.isUndefined(plain.evidence.options)
      // No target accepts it: no eligible route, every exclusion saying why.
      const none = yield* failureOf(
        ModelGateway.generate(command("reply.mixed", { options: { reasoningBudget: 2048 } }))
      )
      assert.strictEqual(none?._tag, "NoEligibleRoute")
      assert.deepStrictEqual(none?._tag === "NoEligibleRoute" ? none.excluded.map((e) => e.reason) : [], [
        "OPTION_UNSUPPORTED",
        "OPTION_UNSUPPORTED"
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("a workflow default the target does not accept is not sent to it, nor recorded for its answer", () => {
    const wf = workflow({
      name: "reply.soft",
      route: [refs.reasoning, refs.classic],
      options: { temperature: { default: 0.2 }, seed: { default: 11 } }
    })
    const { seen, layer } = capturingGateway([wf])
    return Effect.gen(function* () {
      const result = yield* ModelGateway.generate(command("reply.soft"))
      assert.strictEqual(result.evidence.target, refs.reasoning)
      assert.deepStrictEqual(seen[0]?.options, { seed: 11 })
      assert.deepStrictEqual(result.evidence.options, { seed: 11 })
    }).pipe(Effect.provide(layer))
  })

  it.effect("provider options: the workflow's and the command's reach their provider only; others are refused", () => {
    const wf = workflow({
      name: "reply.hatch",
      route: [refs.classic, refs.claude],
      providerOptions: { openai: { service_tier: "flex" } }
    })
    const { seen, layer } = capturingGateway([wf])
    return Effect.gen(function* () {
      const result = yield* ModelGateway.generate(command("reply.hatch", { providerOptions: { openai: { top_k: 5 } } }))
      assert.deepStrictEqual(seen[0]?.providerOptions, { service_tier: "flex", top_k: 5 })
      assert.deepStrictEqual(result.evidence.options, { providerOptions: ["openai.service_tier", "openai.top_k"] })
      for (const [providerOptions, detail] of [
        [{ openai: { api_key: "sk-x" } }, "providerOptions: openai.api_key: may not carry a URL, key or header"],
        [
          { openai: { baseURL: "https://evil.example" } },
          "providerOptions: openai.baseURL: may not carry a URL, key or header"
        ],
        [{ openai: { verbosity: "low" } }, "providerOptions: openai.verbosity: not an allowed field"],
        [{ openai: { model: "other" } }, "providerOptions: openai.model: owned by the gateway"],
        [{ anthropic: { top_k: 5 } }, "providerOptions: anthropic.top_k: not an allowed field"],
        [{ openai: { service_tier: "auto" } }, "providerOptions.openai.service_tier is set by the workflow"]
      ] as const) {
        const error = yield* failureOf(ModelGateway.generate(command("reply.hatch", { providerOptions })))
        assert.deepInclude(error, { _tag: "InvalidRequest", reason: "invalid_command", detail })
        assert.notInclude(JSON.stringify(error), "evil.example")
      }
      assert.strictEqual(seen.length, 1)
    }).pipe(Effect.provide(layer))
  })
})
