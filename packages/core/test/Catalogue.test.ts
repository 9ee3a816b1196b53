import { assert, describe, it } from "@effect/vitest"
import {
  Budgets,
  CallRecorder,
  Catalogue,
  Concurrency,
  GatewayConfig,
  Health,
  ModelCommand,
  ModelGateway,
  ModelResult,
  ModelTarget
} from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Duration, Effect, Exit, Fiber, Layer, Logger, LogLevel, Option, Schema, TestClock } from "effect"
import { Classification } from "./fixtures.js"

const refs = {
  mini: "model://openai/gpt-4.1-mini@eu",
  haiku: "model://anthropic/claude-haiku-4-5@eu",
  local: "model://vllm/llama@eu"
} as const

/** A workflow in encoded form, versioned unless `fields` say otherwise. */
const workflow = (fields: Partial<GatewayConfig.WorkflowEncoded> & { readonly name: string }) => ({
  policyVersion: "policy-1",
  prompt: { id: "classify", version: "3" },
  route: [refs.mini] as const,
  timeout: 3000,
  regions: ["eu"] as const,
  dataClass: "internal",
  ...fields
})

const localTarget: GatewayConfig.FullTargetEncoded = {
  ref: refs.local,
  provider: "vllm",
  model: "llama-3.3-70b",
  regions: ["eu"],
  dataClasses: ["internal"],
  capabilities: { contextWindow: 128_000, maxOutputTokens: 4096, structuredOutput: { mode: "json_schema" } },
  pricing: { inputPerMillion: 0.2, outputPerMillion: 0.2, pricingVersion: "local-1" }
}

const config = GatewayConfig.make({
  targets: [
    { ref: refs.mini, catalogue: "openai/gpt-4.1-mini", regions: ["eu"], dataClasses: ["internal"] },
    localTarget
  ],
  workflows: [
    workflow({ name: "ticket.classify", output: { schema: "Classification", schemaVersion: "1" } }),
    workflow({ name: "ticket.reply", route: [refs.local] })
  ]
})

const decodeFails = (input: unknown) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(GatewayConfig.decode(input))
    assert.isTrue(Exit.isFailure(exit), "decoding must fail")
    if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
      return exit.cause.error.problems.map((p) => `${p.path} ${p.reason}: ${p.detail}`)
    }
    return []
  })

const gateway = (json: unknown, scripts: ScriptedProvider.Scripts) =>
  ModelGateway.layerJson(json, { schemas: { Classification } }).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic", "vllm"], scripts })),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
    )
  )

const command = (workflowName: string) =>
  ModelCommand.decodeUnknown({
    workflow: workflowName,
    tenant: "acme",
    messages: [{ _tag: "user", content: "I was charged twice" }]
  })

describe("Catalogue", () => {
  it("has a version, the models the README and the demo use, and own ids only", () => {
    assert.strictEqual(Catalogue.version, "catalogue-2026-11")
    assert.isTrue(Catalogue.ids.length >= 12)
    for (const id of ["constructor", "__proto__", "toString", "openai/gpt-9"]) {
      assert.isFalse(Catalogue.isId(id), id)
      assert.isTrue(Option.isNone(Catalogue.get(id)), id)
    }
    // The models the README and the demo use are in it.
    for (const id of [
      "openai/gpt-4.1-mini",
      "openai/gpt-4.1",
      "anthropic/claude-haiku-4-5",
      "anthropic/claude-sonnet-4-5",
      "gemini/gemini-2.5-flash",
      "gemini/gemini-2.5-pro"
    ]) {
      assert.isTrue(Catalogue.isId(id), id)
    }
  })

  it.effect("every entry decodes as a valid target with its figures, and survives an encode round trip", () =>
    Effect.gen(function* () {
      const decoded = yield* GatewayConfig.decode({
        targets: Catalogue.ids.map((id, i) => ({
          ref: `model://${id}@eu/${i}`,
          catalogue: id,
          regions: ["eu"],
          dataClasses: ["internal"]
        })),
        workflows: []
      })
      assert.strictEqual(decoded.targets.length, Catalogue.ids.length)
      decoded.targets.forEach((t, i) => {
        const id = Catalogue.ids[i]!
        const e = Catalogue.entries[id]
        assert.strictEqual(t.catalogue, id)
        assert.strictEqual(t.catalogueVersion, Catalogue.version)
        assert.strictEqual(t.provider, e.provider)
        assert.strictEqual(t.model, e.model)
        assert.strictEqual(t.capabilities.contextWindow, e.capabilities.contextWindow)
        assert.strictEqual(t.capabilities.maxOutputTokens, e.capabilities.maxOutputTokens)
        assert.strictEqual(t.capabilities.structuredOutput.mode, e.capabilities.structuredOutput.mode)
        assert.deepStrictEqual(t.capabilities.options, e.capabilities.options)
        assert.deepStrictEqual(
          [t.capabilities.vision, t.capabilities.tools, t.capabilities.streaming],
          [e.capabilities.vision, e.capabilities.tools, e.capabilities.streaming]
        )
        assert.strictEqual(t.pricing.inputPerMillion, e.pricing.inputPerMillion)
        assert.strictEqual(t.pricing.cachedInputPerMillion, e.pricing.cachedInputPerMillion)
        assert.strictEqual(t.pricing.outputPerMillion, e.pricing.outputPerMillion)
        assert.strictEqual(t.pricing.pricingVersion, Catalogue.version)
        assert.strictEqual(t.tokenizerSafetyFactor, e.tokenizerSafetyFactor)
        // Where data may go is never the catalogue's to say.
        assert.deepStrictEqual(t.regions, ["eu"])
        assert.deepStrictEqual(t.dataClasses, ["internal"])
      })
      const encoded = yield* Schema.encode(GatewayConfig.GatewayConfig)(decoded)
      const again = yield* GatewayConfig.decode(encoded)
      assert.deepStrictEqual(again, decoded)
    })
  )

  it.effect("a target naming an entry overrides any field: capabilities key by key, pricing as a whole", () =>
    Effect.gen(function* () {
      const decoded = yield* GatewayConfig.decode(
        GatewayConfig.make({
          targets: [
            {
              ref: "model://azure/gpt-4.1-mini@eu",
              catalogue: "openai/gpt-4.1-mini",
              provider: "azure-openai",
              model: "my-deployment",
              regions: ["eu"],
              dataClasses: ["public", "internal"],
              capabilities: { maxOutputTokens: 4096, options: ["temperature"] },
              pricing: { inputPerMillion: 0.44, outputPerMillion: 1.76, pricingVersion: "azure-eu-2026-11" },
              limits: { maxAttempts: 1 },
              tokenizerSafetyFactor: 1.05
            }
          ],
          workflows: []
        })
      )
      const t = decoded.targets[0]!
      const e = Catalogue.entries["openai/gpt-4.1-mini"]
      assert.strictEqual(t.provider, "azure-openai")
      assert.strictEqual(t.model, "my-deployment")
      assert.strictEqual(t.capabilities.maxOutputTokens, 4096)
      assert.deepStrictEqual(t.capabilities.options, ["temperature"])
      // Not overridden: from the entry.
      assert.strictEqual(t.capabilities.contextWindow, e.capabilities.contextWindow)
      assert.strictEqual(t.capabilities.structuredOutput.mode, "json_schema_strict")
      assert.isTrue(t.capabilities.vision)
      // Pricing replaced whole: no cached price inherited under another price list's version.
      assert.strictEqual(t.pricing.inputPerMillion, 0.44)
      assert.strictEqual(t.pricing.cachedInputPerMillion, undefined)
      assert.strictEqual(t.pricing.pricingVersion, "azure-eu-2026-11")
      assert.strictEqual(t.limits.maxAttempts, 1)
      assert.strictEqual(t.tokenizerSafetyFactor, 1.05)
      assert.strictEqual(t.catalogue, "openai/gpt-4.1-mini")
      assert.strictEqual(t.catalogueVersion, Catalogue.version)
    })
  )

  it.effect("an unknown entry or another catalogue version is a listed problem, next to the others", () =>
    Effect.gen(function* () {
      const problems = yield* decodeFails({
        targets: [
          { ref: "a", catalogue: "openai/gpt-9", regions: ["eu"], dataClasses: ["internal"] },
          { ref: "b", catalogue: "constructor", regions: ["eu"], dataClasses: ["internal"] },
          {
            ref: "c",
            catalogue: "openai/gpt-4.1",
            catalogueVersion: "catalogue-2020-01",
            regions: ["eu"],
            dataClasses: ["internal"]
          },
          { ...localTarget, catalogueVersion: Catalogue.version },
          { ref: "e", catalogue: "gemini/gemini-2.5-flash", regions: [], dataClasses: ["internal"] }
        ],
        workflows: [workflow({ name: "w", timeout: -1 })]
      })
      assert.deepStrictEqual(problems, [
        `targets[0].catalogue UNKNOWN_CATALOGUE_ENTRY: no entry with this id in catalogue ${Catalogue.version} (Catalogue.ids lists them)`,
        `targets[1].catalogue UNKNOWN_CATALOGUE_ENTRY: no entry with this id in catalogue ${Catalogue.version} (Catalogue.ids lists them)`,
        `targets[2].catalogueVersion CATALOGUE_VERSION_MISMATCH: this release ships catalogue ${Catalogue.version}: check the entry's figures, then update catalogueVersion`,
        "targets[3].catalogueVersion CATALOGUE_VERSION_MISMATCH: catalogueVersion needs a catalogue entry (catalogue)",
        "targets[4].regions[0] INVALID_VALUE: is missing",
        "workflows[0].timeout INVALID_VALUE: is invalid (expected milliseconds between 0 and 86400000 (24 h))"
      ])
      // The value given is never echoed.
      assert.isFalse(problems.some((p) => p.includes("gpt-9") || p.includes("2020-01")))
    })
  )

  it("startup validation lists a code-built target naming an unknown entry or another version", () => {
    const t = (fields: Partial<ModelTarget.ModelTarget>) =>
      ModelTarget.ModelTarget.make({
        ref: Schema.decodeSync(ModelTarget.TargetRef)("model://x/y@eu"),
        provider: Schema.decodeSync(ModelTarget.ProviderId)("openai"),
        model: "y",
        capabilities: ModelTarget.Capabilities.make({ contextWindow: 1000, maxOutputTokens: 100 }),
        regions: ["eu"],
        dataClasses: ["internal"],
        pricing: ModelTarget.Pricing.make({ inputPerMillion: 1, outputPerMillion: 1, pricingVersion: "p" }),
        ...fields
      })
    const problems = GatewayConfig.validate(
      {
        config: GatewayConfig.GatewayConfig.make({
          targets: [
            t({ catalogue: "openai/gpt-9", catalogueVersion: Catalogue.version }),
            t({ catalogue: "openai/gpt-4.1", catalogueVersion: "catalogue-2020-01" }),
            t({ catalogueVersion: Catalogue.version }),
            t({ catalogue: "openai/gpt-4.1", catalogueVersion: Catalogue.version })
          ],
          workflows: []
        })
      },
      new Set(["openai"])
    ).filter((p) => p.reason !== "DUPLICATE_TARGET")
    assert.deepStrictEqual(
      problems.map((p) => `${p.path} ${p.reason}`),
      [
        "targets[0].catalogue UNKNOWN_CATALOGUE_ENTRY",
        "targets[1].catalogueVersion CATALOGUE_VERSION_MISMATCH",
        "targets[2].catalogueVersion CATALOGUE_VERSION_MISMATCH"
      ]
    )
  })

  it.effect("evidence carries the catalogue version of the target that answered", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Effect.all([
          Effect.flatMap(command("ticket.classify"), ModelGateway.generate),
          Effect.flatMap(command("ticket.reply"), ModelGateway.generate)
        ])
      )
      yield* TestClock.adjust(Duration.millis(100))
      const [classified, replied] = yield* Fiber.join(fiber)
      const e = classified.evidence
      assert.strictEqual<string | undefined>(e.target, refs.mini)
      assert.strictEqual(e.model, "gpt-4.1-mini-2025-04-14")
      assert.strictEqual(e.catalogueVersion, Catalogue.version)
      assert.strictEqual(e.pricingVersion, Catalogue.version)
      // 100 input and 20 output tokens at the catalogue's 0.40 / 1.60 per million.
      assert.closeTo(e.cost.actual, (100 * 0.4 + 20 * 1.6) / 1_000_000, 1e-12)
      // A target written out in full has no catalogue version.
      assert.strictEqual<string | undefined>(replied.evidence.target, refs.local)
      assert.strictEqual(replied.evidence.catalogueVersion, undefined)
      assert.strictEqual(replied.evidence.pricingVersion, "local-1")
      const records = yield* (yield* CallRecorder.MemoryRecorder).records
      assert.deepStrictEqual(
        records.map((r) => r.evidence.catalogueVersion),
        [Catalogue.version, undefined]
      )
      // And the records encode with it.
      const encoded = yield* Schema.encode(ModelResult.CallRecord)(records[0]!)
      assert.strictEqual(encoded.evidence.catalogueVersion, Catalogue.version)
    }).pipe(
      Effect.provide(
        gateway(config, {
          [refs.mini]: [ScriptedProvider.success({ after: 50, value: { category: "billing", confidence: 0.9 } })],
          [refs.local]: [ScriptedProvider.success({ after: 50, text: "On it." })]
        })
      )
    )
  )
})

describe("unversioned workflows", () => {
  const warnings: Array<string> = []
  const capture = Logger.add(
    Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") {
        warnings.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
      }
    })
  )
  const json = GatewayConfig.make({
    targets: [{ ref: refs.mini, catalogue: "openai/gpt-4.1-mini", regions: ["eu"], dataClasses: ["internal"] }],
    workflows: [
      {
        name: "bare",
        prompt: { id: "bare" },
        route: [refs.mini],
        timeout: 3000,
        regions: ["eu"],
        dataClass: "internal"
      },
      { ...workflow({ name: "promptOnly" }), prompt: { id: "p" } },
      workflow({ name: "versioned" })
    ]
  })

  it.effect('default to "unversioned" in evidence, with one warning per workflow when the gateway is built', () =>
    Effect.gen(function* () {
      warnings.length = 0
      const run = Effect.gen(function* () {
        const fiber = yield* Effect.fork(
          Effect.all([
            Effect.flatMap(command("bare"), ModelGateway.generate),
            Effect.flatMap(command("bare"), ModelGateway.generate),
            Effect.flatMap(command("versioned"), ModelGateway.generate)
          ])
        )
        yield* TestClock.adjust(Duration.millis(10))
        return yield* Fiber.join(fiber)
      })
      const [bare] = yield* run.pipe(Effect.provide(gateway(json, {})))
      assert.strictEqual(bare.evidence.policyVersion, "unversioned")
      assert.strictEqual(bare.evidence.promptVersion, "unversioned")
      assert.deepStrictEqual(warnings, [
        'workflow bare: policyVersion and prompt.version not set, recorded as "unversioned": evidence cannot tell its revisions apart',
        'workflow promptOnly: prompt.version not set, recorded as "unversioned": evidence cannot tell its revisions apart'
      ])
      assert.deepStrictEqual(
        GatewayConfig.unversionedOf(yield* GatewayConfig.decode(json)).map((u) => [u.workflow, u.fields]),
        [
          ["bare", ["policyVersion", "prompt.version"]],
          ["promptOnly", ["prompt.version"]]
        ]
      )
    }).pipe(Effect.provide(capture), Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))
  )
})

describe("GatewayConfig.make", () => {
  it("returns the encoded configuration unchanged and type-checks it", () => {
    const input = {
      targets: [{ ref: "a", catalogue: "gemini/gemini-2.5-flash", regions: ["us"], dataClasses: ["public"] }],
      workflows: [{ name: "w", prompt: { id: "p" }, route: ["a"], timeout: 1000, regions: ["us"], dataClass: "public" }]
    } satisfies GatewayConfig.Encoded
    assert.strictEqual(GatewayConfig.make(input), input)
    const eu = { regions: ["eu"], dataClasses: ["internal"] } as const
    GatewayConfig.make({
      targets: [
        // @ts-expect-error: not a catalogue id
        { ref: "a", catalogue: "openai/gpt-9", ...eu },
        // @ts-expect-error: a target written out in full cannot leave out its pricing
        { ref: "b", provider: "openai", model: "m", capabilities: localTarget.capabilities, ...eu }
      ],
      workflows: [
        {
          name: "w",
          prompt: { id: "p" },
          route: ["a"],
          timeout: 1000,
          regions: ["eu"],
          dataClass: "internal",
          // @ts-expect-error: a misspelt field
          retires: {}
        }
      ]
    })
  })
})
