/**
 * A large configuration (issue 26, low item: reloading 10,000 targets held the event loop 1.5 s) is
 * decoded and hashed a slice at a time. These tests pin that slicing changes nothing: the decoded
 * configuration, every problem and its order, and the version hash are those of one pass over the
 * whole. The event-loop bound itself is measured in `LargeConfig.slow.test.ts`.
 */
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import { it } from "@effect/vitest"
import { Effect, Either, Exit, Schema } from "effect"
import { assert, describe } from "vitest"
import { problemOf } from "../src/internal/config/problems.js"
import { configPath, configProblemsOf } from "../src/internal/issues.js"
import { hashVersion } from "../src/internal/prepareConfig.js"
import { gatewayLayer, providers } from "./fixtures.js"
import { largeConfigJson } from "./largeConfigFixtures.js"

const decodeWhole = Schema.decodeUnknownEither(GatewayConfig.GatewayConfig, {
  errors: "all",
  onExcessProperty: "error"
})

/** The version `hashVersion` gave before slicing: FNV-1a over `JSON.stringify` of the whole encoded config. */
const wholeHash = (config: GatewayConfig.GatewayConfig): string => {
  const text = JSON.stringify(Schema.encodeSync(GatewayConfig.GatewayConfig)(config))
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return `cfg_${(h >>> 0).toString(16).padStart(8, "0")}`
}

describe("a large configuration, decoded and hashed in slices", () => {
  it.effect("decodes to the configuration one pass over the whole gives", () =>
    Effect.gen(function* () {
      const json = largeConfigJson(1_000, 300)
      const sliced = yield* GatewayConfig.decode(json)
      const whole = decodeWhole(json)
      assert.isTrue(Either.isRight(whole))
      if (Either.isRight(whole)) {
        const encode = Schema.encodeSync(GatewayConfig.GatewayConfig)
        assert.deepStrictEqual(encode(sliced), encode(whole.right))
      }
      assert.strictEqual(sliced.targets.length, 1_000)
      assert.strictEqual(sliced.workflows.length, 300)
    })
  )

  it.effect("lists every problem, in the order one pass over the whole lists them", () =>
    Effect.gen(function* () {
      const json = largeConfigJson(600, 50)
      const broken = {
        ...json,
        surplus: 1,
        requireVouchedTenant: "yes",
        targets: json.targets.map((t, i) =>
          i === 3 ? { ...t, pricing: "free" } : i === 450 ? { ...t, regions: [], extra: true } : t
        ),
        workflows: json.workflows.map((w, i) => (i === 7 ? { ...w, timeout: -1, name: 3 } : w))
      }
      const exit = yield* Effect.exit(GatewayConfig.decode(broken))
      const whole = decodeWhole(broken)
      assert.isTrue(Exit.isFailure(exit) && Either.isLeft(whole))
      if (Exit.isFailure(exit) && Either.isLeft(whole) && exit.cause._tag === "Fail") {
        const expected = configProblemsOf(whole.left, configPath).map(problemOf)
        assert.isAtLeast(expected.length, 6)
        assert.deepStrictEqual(exit.cause.error.problems, expected)
      } else assert.fail("expected a GatewayConfigError")
    })
  )

  it.effect("validates in slices with the problems, in order, that one pass gives", () =>
    Effect.gen(function* () {
      const json = largeConfigJson(900, 250)
      const config = yield* GatewayConfig.decode({
        ...json,
        // A duplicated ref (target 0 again, last), and a workflow routing to a ref nobody defines.
        targets: [...json.targets, json.targets[0]],
        workflows: json.workflows.map((w, i) => (i === 200 ? { ...w, route: ["model://openai/none@eu"] } : w))
      })
      // The gateway validates a reload a slice at a time; its error lists what one pass lists.
      const gateway = yield* ModelGateway.ModelGateway
      const exit = yield* Effect.exit(gateway.reload({ config }))
      const whole = GatewayConfig.validate({ config }, new Set(providers))
      assert.isAtLeast(whole.length, 2)
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") assert.deepStrictEqual(exit.cause.error.problems, whole)
      else assert.fail("expected a GatewayConfigError")
    }).pipe(Effect.provide(gatewayLayer({})))
  )

  it.effect("hashes to the version of the whole encoded configuration", () =>
    Effect.gen(function* () {
      for (const requireVouchedTenant of [undefined, true]) {
        const json = { ...largeConfigJson(700, 120), ...(requireVouchedTenant ? { requireVouchedTenant } : {}) }
        const config = yield* GatewayConfig.decode(json)
        assert.strictEqual(yield* hashVersion(config), wholeHash(config))
      }
      // A small one (no slicing at all) too.
      const small = yield* GatewayConfig.decode(largeConfigJson(3, 2))
      assert.strictEqual(yield* hashVersion(small), wholeHash(small))
    })
  )
})
