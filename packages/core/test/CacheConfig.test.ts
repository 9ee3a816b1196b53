import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import { Effect, Exit } from "effect"
import { Classification, gatewayLayer, targets, workflow } from "./fixtures.js"

const problemsOf = (workflows: ReadonlyArray<ReturnType<typeof workflow>>) =>
  Effect.gen(function* () {
    const def: GatewayConfig.Definition = {
      config: GatewayConfig.GatewayConfig.make({ targets, workflows }),
      schemas: { Classification }
    }
    const exit = yield* Effect.exit(Effect.provide(ModelGateway.ModelGateway, gatewayLayer({}, def)))
    if (Exit.isSuccess(exit)) return []
    assert.strictEqual(exit.cause._tag, "Fail")
    if (exit.cause._tag !== "Fail") return []
    return exit.cause.error.problems.map((p) => [p.path, p.reason, p.fix !== undefined && p.fix.length > 0])
  })

describe("workflow cache configuration", () => {
  it("defaults the scope to tenant", () => {
    const w = workflow({ name: "ticket.classify", cache: { ttl: 600_000 } })
    assert.strictEqual(w.cache?.scope, "tenant")
  })

  it.effect("a tenant cache, and a global cache on a public workflow, start", () =>
    Effect.gen(function* () {
      const problems = yield* problemsOf([
        workflow({ name: "a", cache: { ttl: 600_000, scope: "tenant" } }),
        workflow({ name: "b", dataClass: "public", cache: { ttl: 600_000, scope: "global" } })
      ])
      assert.deepStrictEqual(problems, [])
    })
  )

  it.effect("a global scope on a non-public data class and a zero ttl fail startup, each with a fix", () =>
    Effect.gen(function* () {
      const problems = yield* problemsOf([
        workflow({ name: "a", dataClass: "internal", cache: { ttl: 600_000, scope: "global" } }),
        workflow({ name: "b", cache: { ttl: 0 } })
      ])
      assert.deepStrictEqual(problems, [
        ["workflows[0].cache.scope", "CACHE_GLOBAL_SCOPE_NOT_ALLOWED", true],
        ["workflows[1].cache.ttl", "NON_POSITIVE_CACHE_TTL", true]
      ])
    })
  )
})
