/**
 * The mock provider server in its own process, so that the benchmark's `process.cpuUsage()` counts
 * the client side only. Prints one JSON line `{ "url": … }` when listening; exits when its stdin
 * closes (the parent died or is done). Requests for {@link downModel} get a retryable 503 (the
 * primary that is down in the gateway's failover subject); every other request the answer.
 */
import { NodeRuntime } from "@effect/platform-node"
import * as MockProviderServer from "@modelgate/testing/MockProviderServer"
import { Effect } from "effect"
import { answerText, downModel } from "./fixtures.js"

const main = Effect.gen(function* () {
  const mock = yield* MockProviderServer.MockProviderServer
  const down = MockProviderServer.failure(503)
  yield* mock.setHandler((request) => (request.model === downModel ? down : undefined))
  process.stdout.write(`${JSON.stringify({ url: mock.url, openai: mock.baseUrl("openai") })}\n`)
  yield* Effect.async<void>((resume) => {
    process.stdin.on("close", () => resume(Effect.void))
    process.stdin.on("end", () => resume(Effect.void))
    process.stdin.resume()
  })
}).pipe(
  Effect.provide(
    MockProviderServer.layer({
      record: false,
      defaultBehavior: MockProviderServer.success({
        text: answerText,
        usage: { input: 42, output: 96 },
        model: "bench-model-2026-01-01"
      })
    })
  )
)

NodeRuntime.runMain(main, { disablePrettyLogger: true })
