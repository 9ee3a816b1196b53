/**
 * Configuration edges (issue 12, item 7): non-finite and unbounded durations, names that live on
 * `Object.prototype`, values echoed by configuration errors, `__proto__` / `constructor` keys in
 * JSON, and a reservation TTL shorter than a workflow's deadline.
 */
import { assert, describe, it } from "@effect/vitest"
import { BreakerStore, Budgets, BudgetStore, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { GatewayConfigError } from "@modelgate/core/Errors"
import { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Duration, Effect, Exit, Fiber, Layer, Option, Schema, TestClock } from "effect"
import { inspect } from "node:util"
import {
  Classification,
  command,
  definition,
  gatewayLayer,
  plainTarget,
  plainWorkflow,
  refs,
  targets,
  workflow,
  workflows
} from "./fixtures.js"
import { decode } from "../src/internal/healthConfig.js"
import { defaultReservationTtl } from "../src/internal/budgetWindow.js"
import { maxReservationTtl } from "../src/internal/budgetWindow.js"
import * as BudgetConfig from "../src/internal/budgetConfig.js"
import * as ConcurrencyConfig from "../src/internal/concurrencyConfig.js"
import { maxDuration } from "../src/internal/fieldSchemas.js"

/** The failure of `effect` when it is a `GatewayConfigError`; throws on success or on a defect. */
const configError = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit): GatewayConfigError => {
    if (Exit.isSuccess(exit)) throw new Error("expected a GatewayConfigError, got a success")
    const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
    if (!(error instanceof GatewayConfigError))
      throw new Error(`expected a GatewayConfigError: ${Cause.pretty(exit.cause)}`)
    return error
  })

const pathsOf = (error: GatewayConfigError) => error.problems.map((p) => p.path)

/** Every rendering of an error a log or a client may see. */
const renderings = (error: GatewayConfigError) => [
  error.message,
  String(error),
  JSON.stringify(error),
  inspect(error, { depth: 20 })
]

const validTarget = plainTarget
const validWorkflow = plainWorkflow

/** `1e309` is what `JSON.parse` makes of a number too large for a double: `Infinity`. */
const infinity: unknown = JSON.parse("1e309")
/** The longest configuration duration (24 h) and reservation TTL (7 days), in milliseconds. */
const day = 86_400_000
const week = 7 * day
const tooLong = day + 1

describe("config edges: durations are finite and bounded", () => {
  it("JSON.parse turns 1e309 into Infinity (the premise); the bounds are 24 h and 7 days", () => {
    assert.strictEqual(infinity, Number.POSITIVE_INFINITY)
    assert.strictEqual(Duration.toMillis(maxDuration), day)
    assert.strictEqual(Duration.toMillis(maxReservationTtl), week)
  })

  it.effect("1e309 or more than 24 h as a gateway duration (every kind): a listed problem at that path", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [string, (value: unknown) => unknown]> = [
        ["workflows[0].timeout", (v) => ({ targets: [validTarget], workflows: [{ ...validWorkflow, timeout: v }] })],
        [
          "workflows[0].retry.baseDelay",
          (v) => ({ targets: [validTarget], workflows: [{ ...validWorkflow, retry: { baseDelay: v } }] })
        ],
        [
          "workflows[0].retry.maxDelay",
          (v) => ({ targets: [validTarget], workflows: [{ ...validWorkflow, retry: { maxDelay: v } }] })
        ],
        ...(["perAttemptTimeout", "ttftTimeout", "streamIdleTimeout", "minimumAttemptTime"] as const).map(
          (field) =>
            [
              `targets[0].limits.${field}`,
              (v: unknown) => ({
                targets: [{ ...validTarget, limits: { ...validTarget.limits, [field]: v } }],
                workflows: [validWorkflow]
              })
            ] as const
        )
      ]
      for (const [path, make] of cases) {
        for (const value of [infinity, tooLong]) {
          const error = yield* configError(GatewayConfig.decode(make(value)))
          assert.include(pathsOf(error), path, `${path} = ${String(value)}`)
        }
        // the bound itself is accepted
        assert.isTrue(Exit.isSuccess(yield* Effect.exit(GatewayConfig.decode(make(day)))))
      }
    })
  )

  it.effect("1e309 as a health cool-down or window, or as a reservation TTL: a listed problem", () =>
    Effect.gen(function* () {
      for (const [json, path] of [
        [{ breaker: { coolDown: infinity } }, "health.breaker.coolDown"],
        [{ window: { duration: infinity } }, "health.window.duration"],
        [{ targets: { "model://a/b@eu": { coolDown: infinity } } }, "health.targets.model://a/b@eu.coolDown"],
        [{ breaker: { coolDown: tooLong } }, "health.breaker.coolDown"]
      ] as const) {
        const error = yield* configError(decode(json))
        assert.include(pathsOf(error), path)
      }
      for (const ttl of [infinity, week + 1]) {
        const decoded = Schema.decodeUnknownEither(BudgetConfig.BudgetsConfig)({
          tenants: { acme: { limit: 1 } },
          reservationTtl: ttl
        })
        // refused by the schema, or by `make`'s validation with a listed problem
        if (decoded._tag === "Right") {
          const error = yield* configError(Budgets.make(decoded.right).pipe(Effect.provide(BudgetStore.layerMemory)))
          assert.include(pathsOf(error), "budgets.reservationTtl")
        }
      }
      const error = yield* configError(
        Budgets.make({ tenants: { acme: { limit: 1 } }, reservationTtl: Duration.infinity }).pipe(
          Effect.provide(BudgetStore.layerMemory)
        )
      )
      assert.deepStrictEqual(pathsOf(error), ["budgets.reservationTtl"])
    })
  )

  it("a workflow built in code refuses an infinite timeout; one built without validation is a listed problem", () => {
    const fields = workflow({ name: "ticket.reply" })
    assert.throws(() => Workflow.make({ ...fields, timeout: Duration.infinity }))
    const unchecked = Workflow.make({ ...fields, timeout: Duration.infinity }, { disableValidation: true })
    const problems = GatewayConfig.validate(
      { config: GatewayConfig.GatewayConfig.make({ targets, workflows: [unchecked] }) },
      new Set(["openai", "anthropic", "gemini", "vllm"])
    )
    assert.deepStrictEqual(
      problems.map((p) => [p.path, p.reason]),
      [["workflows[0].timeout", "DURATION_TOO_LONG"]]
    )
  })
})

describe("config edges: names that live on Object.prototype", () => {
  const prototypeNames = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"] as const

  it.effect("as output.schema or degrade handler name: listed problems at startup, never a TypeError", () =>
    Effect.gen(function* () {
      const config = GatewayConfig.GatewayConfig.make({
        targets,
        workflows: prototypeNames.flatMap((name, i) => [
          workflow({ name: `schema.${i}`, output: { schema: name, schemaVersion: "1" } }),
          workflow({ name: `handler.${i}`, degrade: { _tag: "handler", name } })
        ])
      })
      const error = yield* configError(
        Effect.provide(ModelGateway.ModelGateway, gatewayLayer({}, { config, schemas: { Classification } }))
      )
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason]),
        prototypeNames.flatMap((_, i) => [
          [`workflows[${2 * i}].output.schema`, "UNKNOWN_SCHEMA"],
          [`workflows[${2 * i + 1}].degrade.name`, "UNKNOWN_DEGRADE_HANDLER"]
        ])
      )
    })
  )

  it.effect("a schema and a degrade handler given under such names (own properties) work", () =>
    Effect.gen(function* () {
      const schemas: Record<string, Schema.Schema.AnyNoContext> = { Classification }
      const degradeHandlers: Record<string, GatewayConfig.DegradeHandler> = {}
      for (const name of prototypeNames) {
        Object.defineProperty(schemas, name, { value: Classification, enumerable: true })
        Object.defineProperty(degradeHandlers, name, {
          value: () => Effect.succeed({ category: "other", confidence: 0 }),
          enumerable: true
        })
      }
      const config = GatewayConfig.GatewayConfig.make({
        targets,
        workflows: [
          ...workflows,
          workflow({
            name: "proto.names",
            output: { schema: "toString", schemaVersion: "1" },
            degrade: { _tag: "handler", name: "__proto__" }
          })
        ]
      })
      const layer = gatewayLayer(
        {
          [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
          [refs.fallback]: [ScriptedProvider.unavailable({ after: 10 })]
        },
        { config, schemas, degradeHandlers }
      )
      const exit = yield* Effect.gen(function* () {
        const gateway = yield* ModelGateway.ModelGateway
        const fiber = yield* Effect.fork(Effect.exit(gateway.generate(command("proto.names"))))
        yield* TestClock.adjust(2_000)
        return yield* Fiber.join(fiber)
      }).pipe(Effect.provide(layer))
      assert.isTrue(Exit.isSuccess(exit), Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "")
      if (Exit.isSuccess(exit)) {
        assert.isTrue(exit.value.evidence.degraded)
        assert.deepStrictEqual(exit.value.content.value, { category: "other", confidence: 0 })
      }
    })
  )

  it.effect("a schema or handler map holding something else than a schema or a function: a listed problem", () =>
    Effect.gen(function* () {
      // what an untyped (JavaScript) caller can hand over
      const schemas: Record<string, Schema.Schema.AnyNoContext> = JSON.parse('{"Classification": {"type": "object"}}')
      // a schema with no JSON Schema form (a declaration without the annotation)
      schemas.Opaque = Schema.declare((u): u is string => typeof u === "string")
      const degradeHandlers: Record<string, GatewayConfig.DegradeHandler> = JSON.parse('{"keywords": "rules"}')
      const config = GatewayConfig.GatewayConfig.make({
        targets,
        workflows: [
          workflow({ name: "a", output: { schema: "Classification", schemaVersion: "1" } }),
          workflow({ name: "b", degrade: { _tag: "handler", name: "keywords" } }),
          workflow({ name: "c", output: { schema: "Opaque", schemaVersion: "1" } })
        ]
      })
      const error = yield* configError(
        Effect.provide(ModelGateway.ModelGateway, gatewayLayer({}, { config, schemas, degradeHandlers }))
      )
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason]),
        [
          ["workflows[0].output.schema", "INVALID_SCHEMA"],
          ["workflows[1].degrade.name", "INVALID_DEGRADE_HANDLER"],
          ["workflows[2].output.schema", "INVALID_SCHEMA"]
        ]
      )
    })
  )
})

describe("config edges: errors name paths and problems, never values", () => {
  const canary = "sk-zqxcanary-0123456789abcdef"

  it.effect("a key pasted into the gateway config's fields is never echoed", () =>
    Effect.gen(function* () {
      const error = yield* configError(
        GatewayConfig.decode({
          targets: [
            {
              ...validTarget,
              model: ` ${canary} `,
              ref: `${canary}${"x".repeat(300)}`,
              provider: canary.toUpperCase(),
              regions: [` ${canary}`],
              tier: canary,
              pricing: { ...validTarget.pricing, inputPerMillion: canary },
              limits: { ...validTarget.limits, perAttemptTimeout: canary }
            }
          ],
          workflows: [{ ...validWorkflow, dataClass: `${canary} `, name: `${canary}!`, timeout: [canary] }]
        })
      )
      const paths = pathsOf(error)
      for (const path of [
        "targets[0].model",
        "targets[0].ref",
        "targets[0].provider",
        "targets[0].regions[0]",
        "targets[0].tier",
        "targets[0].pricing.inputPerMillion",
        "targets[0].limits.perAttemptTimeout",
        "workflows[0].dataClass",
        "workflows[0].name",
        "workflows[0].timeout"
      ]) {
        assert.include(paths, path)
      }
      for (const text of renderings(error)) {
        assert.notInclude(text.toLowerCase(), "zqxcanary")
      }
      // the problem is still named: what was expected
      const model = error.problems.find((p) => p.path === "targets[0].model")
      assert.include(model?.detail, "expected")
    })
  )

  it.effect("budgets, concurrency and health configs from an untyped caller: no value echoed", () =>
    Effect.gen(function* () {
      const budgets: Budgets.Options = JSON.parse(
        `{"tenants": {"acme": {"limit": "${canary}", "period": "${canary}"}}, "undeclaredTenants": "${canary}", "reservationTtl": "${canary}"}`
      )
      const concurrency: Concurrency.Options = JSON.parse(
        `{"permits": "${canary}", "tenants": {"acme": {"reserved": "${canary}", "max": "${canary}"}}, "undeclaredMax": "${canary}", "targets": {"t": "${canary}"}}`
      )
      const errors = [
        yield* configError(Budgets.make(budgets).pipe(Effect.provide(BudgetStore.layerMemory))),
        yield* configError(Concurrency.make(concurrency)),
        yield* configError(
          decode({
            breaker: { halfOpenProbes: canary, coolDown: canary },
            window: { samples: canary },
            targets: { "model://a/b@eu": { failureRatio: canary } }
          })
        ),
        yield* configError(
          Health.make(
            Health.HealthConfig.make({
              window: Health.WindowSettings.make({ samples: 123456789.5 }),
              maxRoutes: 987654321.5
            })
          ).pipe(Effect.provide(BreakerStore.layerMemory))
        )
      ]
      for (const error of errors) {
        assert.isAbove(error.problems.length, 0)
        for (const text of renderings(error)) {
          assert.notInclude(text.toLowerCase(), "zqxcanary")
          assert.notInclude(text, "123456789")
          assert.notInclude(text, "987654321")
        }
      }
    })
  )
})

describe("config edges: __proto__ and constructor keys in JSON are listed problems", () => {
  const keys = ["__proto__", "constructor"] as const

  it.effect("Budgets: decoded, decoded by the schema alone, or passed raw to make", () =>
    Effect.gen(function* () {
      for (const key of keys) {
        const text = `{"tenants": {"${key}": {"limit": 5}, "acme": {"limit": 1}}}`
        const decoded = yield* configError(Budgets.decode(JSON.parse(text)))
        assert.deepStrictEqual(
          decoded.problems.map((p) => [p.path, p.reason]),
          [[`budgets.tenants.${key}`, "RESERVED_KEY"]]
        )
        // the schema alone (whatever the decoder's options) refuses the key instead of dropping it
        const bySchema = Schema.decodeUnknownEither(BudgetConfig.BudgetsConfig)(JSON.parse(text))
        assert.strictEqual(bySchema._tag, "Left", key)
        // raw JSON passed straight to `make` (an untyped caller, no decoding)
        const raw: Budgets.Options = JSON.parse(text)
        const error = yield* configError(Budgets.make(raw).pipe(Effect.provide(BudgetStore.layerMemory)))
        assert.deepStrictEqual(
          error.problems.map((p) => [p.path, p.reason]),
          [[`budgets.tenants.${key}`, "RESERVED_KEY"]]
        )
      }
    })
  )

  it.effect("Concurrency: tenants and targets", () =>
    Effect.gen(function* () {
      for (const key of keys) {
        const text = `{"permits": 4, "tenants": {"${key}": {"reserved": 1}}, "targets": {"${key}": 2, "model://a/b@eu": 1}}`
        const expected = [
          [`concurrency.tenants.${key}`, "RESERVED_KEY"],
          [`concurrency.targets.${key}`, "RESERVED_KEY"]
        ]
        const decoded = yield* configError(Concurrency.decode(JSON.parse(text)))
        assert.deepStrictEqual(
          decoded.problems.map((p) => [p.path, p.reason]),
          expected
        )
        assert.strictEqual(
          Schema.decodeUnknownEither(ConcurrencyConfig.ConcurrencyConfig)(JSON.parse(text))._tag,
          "Left"
        )
        const raw: Concurrency.Options = JSON.parse(text)
        const error = yield* configError(Concurrency.make(raw))
        assert.deepStrictEqual(
          error.problems.map((p) => [p.path, p.reason]),
          expected
        )
      }
    })
  )

  it.effect("Health: per-target overrides", () =>
    Effect.gen(function* () {
      for (const key of keys) {
        const error = yield* configError(
          decode(JSON.parse(`{"targets": {"${key}": {"enabled": false}, "model://a/b@eu": {}}}`))
        )
        assert.deepStrictEqual(
          error.problems.map((p) => [p.path, p.reason]),
          [[`health.targets.${key}`, "RESERVED_KEY"]]
        )
      }
    })
  )
})

describe("config edges: the reservation TTL exceeds every workflow's deadline", () => {
  const withBudgets = (reservationTtl: Duration.DurationInput) =>
    ModelGateway.layer(definition).pipe(
      Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic", "gemini", "vllm"], scripts: {} })),
      Layer.provideMerge(
        Layer.mergeAll(
          Budgets.layerMemory({ tenants: { acme: { limit: 1 } }, reservationTtl }),
          Concurrency.layerOff,
          Health.layerOff
        )
      ),
      ModelGateway.withDefaults()
    )

  it.effect("a TTL not above a workflow timeout fails startup with one problem per workflow", () =>
    Effect.gen(function* () {
      // every fixture workflow has a 1000 ms timeout
      const error = yield* configError(Effect.provide(ModelGateway.ModelGateway, withBudgets(1000)))
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason, p.workflow]),
        workflows.map((w, i) => [`workflows[${i}].timeout`, "TIMEOUT_NOT_BELOW_RESERVATION_TTL", w.name])
      )
      const gateway = yield* Effect.provide(ModelGateway.ModelGateway, withBudgets(1001))
      assert.strictEqual(gateway.router.workflows.size, workflows.length)
    })
  )

  it.effect("the Budgets service tells its TTL; unlimited budgets hold nothing", () =>
    Effect.gen(function* () {
      const limited = yield* Effect.provide(
        Budgets.Budgets,
        Budgets.layerMemory({ tenants: { acme: { limit: 1 } }, reservationTtl: "2 minutes" })
      )
      assert.isTrue(
        limited.reservationTtl !== undefined && Duration.equals(limited.reservationTtl, Duration.minutes(2))
      )
      const byDefault = yield* Effect.provide(Budgets.Budgets, Budgets.layerMemory({ tenants: { acme: { limit: 1 } } }))
      assert.strictEqual(byDefault.reservationTtl, defaultReservationTtl)
      const unlimited = yield* Effect.provide(Budgets.Budgets, Budgets.layerOff)
      assert.isUndefined(unlimited.reservationTtl)
    })
  )
})
