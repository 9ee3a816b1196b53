/**
 * Issue 26, low item: reloading a 10,000-target configuration held the event loop ~1.5 s (decoding
 * and hashing it in one synchronous pass). Measured in real time with `monitorEventLoopDelay`: the
 * reload (decode, validate, compile, hash) never holds the loop for 100 ms, from JSON or from an
 * already-decoded definition.
 */
import { monitorEventLoopDelay } from "node:perf_hooks"
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import { Effect, ManagedRuntime } from "effect"
import { assert, describe, it } from "vitest"
import { definition, gatewayLayer } from "./fixtures.js"
import { largeConfigJson } from "./largeConfigFixtures.js"

/** Runs `work`, returning the longest gap between event-loop turns while it ran, in ms. */
const longestGap = async (work: () => Promise<unknown>): Promise<{ gapMs: number; elapsedMs: number }> => {
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  await work()
  const elapsedMs = performance.now() - started
  // One more timer turn, so a gap that ended with the work is recorded.
  await new Promise((resolve) => setTimeout(resolve, 20))
  delay.disable()
  return { gapMs: delay.max / 1e6, elapsedMs }
}

describe("reloading a 10,000-target configuration", () => {
  it("never holds the event loop for 100 ms", async () => {
    const runtime = ManagedRuntime.make(gatewayLayer({}))
    try {
      const gateway = await runtime.runPromise(ModelGateway.ModelGateway)
      const json = largeConfigJson(10_000, 100)
      const config = await runtime.runPromise(GatewayConfig.decode(json))
      const fromDefinition = await longestGap(() => runtime.runPromise(gateway.reload({ ...definition, config })))
      const fromJson = await longestGap(() => runtime.runPromise(gateway.reload({ json })))
      const version = await runtime.runPromise(gateway.configVersion)
      process.stdout.write(
        `10,000-target reload: from JSON ${fromJson.elapsedMs.toFixed(0)} ms (longest gap ${fromJson.gapMs.toFixed(1)} ms), ` +
          `from a definition ${fromDefinition.elapsedMs.toFixed(0)} ms (longest gap ${fromDefinition.gapMs.toFixed(1)} ms)\n`
      )
      assert.match(version, /^cfg_[0-9a-f]{8}$/)
      assert.strictEqual(
        await runtime.runPromise(Effect.map(ModelGateway.ModelGateway, (g) => g.router.workflows.size)),
        100
      )
      assert.isBelow(fromJson.gapMs, 100)
      assert.isBelow(fromDefinition.gapMs, 100)
    } finally {
      await runtime.dispose()
    }
  })
})
