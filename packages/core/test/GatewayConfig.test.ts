import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import { Effect, Exit, Schema } from "effect"
import { Classification, definition, gatewayLayer, refs, target, targets, workflow, workflows } from "./fixtures.js"

const problemsOf = (def: GatewayConfig.Definition) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(Effect.provide(ModelGateway.ModelGateway, gatewayLayer({}, def)))
    assert.isTrue(Exit.isFailure(exit), "layer construction must fail")
    if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
      const error = exit.cause.error
      assert.strictEqual(error._tag, "GatewayConfigError")
      return error.problems.map((p) => [p.path, p.reason, p.target ?? "", p.detail, p.fix])
    }
    return []
  })

describe("startup validation", () => {
  it.effect("a valid configuration builds", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      assert.strictEqual(gateway.router.workflows.size, workflows.length)
    }).pipe(Effect.provide(gatewayLayer({})))
  )

  it.effect("an incompatible fallback (schema feature, tools, region, data class) is rejected with every problem", () =>
    Effect.gen(function* () {
      const Order = Schema.Struct({
        orderId: Schema.String.pipe(Schema.pattern(/^ORD-\d+$/)),
        attributes: Schema.Record({ key: Schema.String, value: Schema.String })
      })
      const problems = yield* problemsOf({
        config: GatewayConfig.GatewayConfig.make({
          targets: [
            ...targets,
            target("model://openai/retired@eu", "openai", { status: "disabled" }),
            target("model://mistral/small@eu", "mistral", {}),
            target("model://openai/secret@eu", "openai", { dataClasses: ["public"] }),
            target("model://openai/bad-limits@eu", "openai", {
              limits: { perAttemptTimeout: 50, minimumAttemptTime: 80 }
            })
          ],
          workflows: [
            workflow({
              name: "ticket.extract",
              requires: { tools: true },
              output: { schema: "Order", schemaVersion: "2" },
              route: [
                refs.primary,
                refs.fallback,
                refs.us,
                refs.strictLocal,
                "model://openai/unknown@eu",
                refs.fallback,
                "model://openai/retired@eu",
                "model://mistral/small@eu",
                "model://openai/secret@eu"
              ]
            }),
            workflow({ name: "ticket.zero", timeout: 0, output: { schema: "Missing", schemaVersion: "1" } })
          ]
        }),
        schemas: { Order, Classification }
      })
      const has = (path: string, reason: string, t = "") =>
        assert.isTrue(
          problems.some(([p, r, tg]) => p === path && r === reason && tg === t),
          `expected ${path} ${reason} ${t} in ${JSON.stringify(problems, null, 1)}`
        )
      has("workflows[0].route[0]", "SCHEMA_FEATURE_UNSUPPORTED", refs.primary)
      has("workflows[0].route[2]", "DATA_REGION_MISMATCH", refs.us)
      has("workflows[0].route[3]", "CAPABILITY_MISSING", refs.strictLocal)
      has("workflows[0].route[3]", "SCHEMA_FEATURE_UNSUPPORTED", refs.strictLocal)
      has("workflows[0].route[4]", "UNKNOWN_TARGET", "model://openai/unknown@eu")
      has("workflows[0].route[5]", "DUPLICATE_ROUTE_TARGET", refs.fallback)
      has("workflows[0].route[6]", "DISABLED", "model://openai/retired@eu")
      has("workflows[0].route[8]", "DATA_CLASS_NOT_ALLOWED", "model://openai/secret@eu")
      has("targets[5].provider", "NO_ADAPTER", "model://mistral/small@eu")
      has("targets[7].limits.minimumAttemptTime", "MINIMUM_EXCEEDS_PER_ATTEMPT", "model://openai/bad-limits@eu")
      has("workflows[1].timeout", "NON_POSITIVE_TIMEOUT")
      has("workflows[1].output.schema", "UNKNOWN_SCHEMA")
      has("workflows[1].route[0]", "MINIMUM_EXCEEDS_TIMEOUT", refs.primary)
      const strict = problems.find(([p, r]) => p === "workflows[0].route[0]" && r === "SCHEMA_FEATURE_UNSUPPORTED")
      assert.strictEqual(strict?.[3], "unsupported: openObject, pattern")
      // Every startup problem says what to change; this one names the mode and what it supports.
      assert.match(strict?.[4] ?? "", /^json_schema_strict supports \[.*\]: /)
      assert.isTrue(
        problems.every((p) => (p[4] ?? "").length > 0),
        JSON.stringify(problems, null, 1)
      )
      assert.strictEqual(problems.length, 14, JSON.stringify(problems, null, 1))
    })
  )

  it("startup problems say what to change, with the values seen and the allowed ones", () => {
    const Ticket = Schema.Struct({ category: Schema.String, note: Schema.optional(Schema.String) })
    const problems = GatewayConfig.validate(
      {
        config: GatewayConfig.GatewayConfig.make({
          targets: [
            target(refs.primary, "openai", { mode: "json_schema_strict" }),
            target("model://openai/upper@eu", "openai", { regions: ["EU"] }),
            target("model://mistral/small@eu", "mistral", {})
          ],
          workflows: [
            workflow({
              name: "ticket.strict",
              output: { schema: "Ticket", schemaVersion: "1" },
              route: [refs.primary, "model://openai/upper@eu", "model://mistral/small@eu"]
            })
          ]
        }),
        schemas: { Ticket }
      },
      new Set(["openai"])
    )
    const find = (path: string, reason: string) => problems.find((p) => p.path === path && p.reason === reason)
    // Schema.optional under a strict mode: the fix names Schema.NullOr.
    const strict = find("workflows[0].route[0]", "SCHEMA_FEATURE_UNSUPPORTED")
    assert.strictEqual(strict?.detail, "unsupported: optionalProperties")
    assert.include(strict?.fix, "use Schema.NullOr(X) instead of Schema.optional(X)")
    // The regions are shown, so "EU" against "eu" is visible.
    const region = find("workflows[0].route[1]", "DATA_REGION_MISMATCH")
    assert.strictEqual(region?.detail, "runs in [EU], allowed [eu]")
    assert.include(region?.fix, '["EU"] a subset of the workflow\'s ["eu"]')
    // NO_ADAPTER names the provider and the adapters provided.
    const adapter = find("targets[2].provider", "NO_ADAPTER")
    assert.strictEqual(adapter?.detail, 'no adapter provided for provider "mistral"; adapters provided: ["openai"]')
    assert.include(adapter?.fix, 'provide the adapter layer of provider "mistral"')
    // Every problem carries a fix, and its text form shows it.
    assert.isTrue(problems.length > 0 && problems.every((p) => p.fix !== undefined && p.fix.length > 0))
    assert.include(String(adapter), "(fix: provide the adapter layer")
  })

  it.effect("decoding from plain JSON reports every bad field with its path", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        GatewayConfig.decode({
          targets: [
            {
              ref: "",
              provider: "openai",
              model: "m",
              capabilities: { contextWindow: -1, maxOutputTokens: 10 },
              regions: [],
              dataClasses: ["internal"],
              pricing: { inputPerMillion: 1, outputPerMillion: 1, pricingVersion: "v1" },
              baseUrl: "https://evil.example"
            }
          ],
          workflows: [{ name: "x", policyVersion: "1", prompt: { id: "p", version: "1" }, route: [], timeout: "soon" }]
        })
      )
      const paths = error.problems.map((p) => p.path)
      for (const expected of [
        "targets[0].ref",
        "targets[0].capabilities.contextWindow",
        "targets[0].regions[0]",
        "targets[0].baseUrl",
        "workflows[0].route[0]",
        "workflows[0].timeout",
        "workflows[0].regions",
        "workflows[0].dataClass"
      ]) {
        assert.include(paths, expected)
      }
      assert.include(error.message, "targets[0].baseUrl")
    })
  )

  it.effect("the same configuration decodes from JSON and builds the gateway", () =>
    Effect.gen(function* () {
      const json = JSON.parse(JSON.stringify(Schema.encodeSync(GatewayConfig.GatewayConfig)(definition.config)))
      const decoded = yield* GatewayConfig.decode(json)
      assert.strictEqual(decoded.targets.length, targets.length)
      const gateway = yield* Effect.provide(
        ModelGateway.ModelGateway,
        gatewayLayer({}, { config: decoded, schemas: { Classification } })
      )
      assert.strictEqual(gateway.router.workflows.size, workflows.length)
    })
  )
})
