/**
 * The minimal README example (`examples/readme/minimal.ts`): its configuration fits in 15 lines, and
 * that configuration, as written, serves a first call (here against `ScriptedProvider`, on the
 * virtual clock).
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { CallRecorder, Catalogue, ModelGateway } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Fiber, Layer, TestClock } from "effect"
import { classify, config, Ticket } from "../readme/minimal.js"

const source = readFileSync(fileURLToPath(new URL("../readme/minimal.ts", import.meta.url)), "utf8").split("\n")

/** Non-blank lines from the one after the `// Configuration` comment to the first `})`, inclusive. */
const configurationLines = (): ReadonlyArray<string> => {
  const start = source.findIndex((line) => line.startsWith("// Configuration"))
  const end = source.findIndex((line, i) => i > start && line === "})")
  assert.isTrue(start >= 0 && end > start, "minimal.ts marks its configuration")
  return source.slice(start + 1, end + 1).filter((line) => line.trim() !== "")
}

describe("minimal README example", () => {
  it("has at most 15 lines of configuration", () => {
    const lines = configurationLines()
    assert.isAtMost(lines.length, 15)
    // The block counted is the configuration handed to the gateway.
    assert.strictEqual(lines[0], 'const mini = "model://openai/gpt-4.1-mini@eu"')
    assert.strictEqual(lines[1], "export const config = GatewayConfig.make({")
  })

  it.effect("its configuration serves a first call, priced and versioned by the catalogue", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(classify("I was charged twice"))
      yield* TestClock.adjust("50 millis")
      const value = yield* Fiber.join(fiber)
      assert.deepStrictEqual(value, { category: "billing", confidence: 0.9 })
      const [record] = yield* (yield* CallRecorder.MemoryRecorder).records
      const e = record!.evidence
      assert.strictEqual(record!.outcome, "success")
      assert.strictEqual(e.model, Catalogue.entries["openai/gpt-4.1-mini"].model)
      assert.strictEqual(e.catalogueVersion, Catalogue.version)
      assert.strictEqual(e.pricingVersion, Catalogue.version)
      assert.strictEqual(e.policyVersion, "unversioned")
      assert.strictEqual(e.promptVersion, "unversioned")
      const attempts = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      assert.deepStrictEqual(
        attempts.map((a) => [a.target, a.startedAt, a.endedAt]),
        [["model://openai/gpt-4.1-mini@eu", 0, 50]]
      )
    }).pipe(
      Effect.provide(
        ModelGateway.layerJson(config, { schemas: { Ticket } }).pipe(
          // Budgets, concurrency and breakers: the defaults; call records: the in-memory recorder below.
          ModelGateway.withDefaults(),
          Layer.provideMerge(
            ScriptedProvider.layer({
              providers: ["openai"],
              scripts: {
                "model://openai/gpt-4.1-mini@eu": [
                  ScriptedProvider.success({ after: 50, value: { category: "billing", confidence: 0.9 } })
                ]
              }
            })
          ),
          Layer.provideMerge(CallRecorder.layerMemory)
        )
      )
    )
  )
})
