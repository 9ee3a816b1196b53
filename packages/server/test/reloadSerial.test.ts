/**
 * `Server.Running.reload` runs one reload at a time: a second reload waits until the first has
 * swapped its configuration in, then runs, and the server ends on the later one. The reload step is
 * held on a `Deferred` here (no timers), over a real gateway and a server on 127.0.0.1.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as OpenAi from "@modelgate/adapters/openai"
import {
  Budgets,
  CallRecorder,
  Concurrency,
  GatewayConfig,
  Health,
  ModelGateway,
  RateLimitStore
} from "@modelgate/core"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayConfig } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import * as Server from "../src/Server.js"
import * as ServerConfig from "../src/ServerConfig.js"
import { type GatedUpstream, startGatedUpstream } from "./gatedUpstream.js"

let upstream: GatedUpstream
beforeAll(async () => {
  upstream = await startGatedUpstream()
})
afterAll(() => upstream.stop())

const fileJson = (keyId: string) => ({
  listen: { port: 0 },
  keys: [{ id: keyId, sha256: hashKey(`key-${keyId}`), tenant: "acme", workflows: ["*"] }],
  gateway: { targets: [gatewayConfig.targets[0]], workflows: [gatewayConfig.workflows[0]] }
})

const gatewayOf = (config: GatewayConfig.GatewayConfig) =>
  ModelGateway.layer({ config }).pipe(
    Layer.provide(OpenAi.layer({ id: "openai", baseUrl: upstream.baseUrl })),
    Layer.provide(NodeHttpClient.layerUndici),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layerOff,
        Concurrency.layerOff,
        Health.layerMemory(),
        RateLimitStore.layerMemory,
        Layer.succeed(CallRecorder.CallRecorder, { record: () => Effect.void })
      )
    )
  )

const status = (url: string, keyId: string) =>
  Effect.promise(() =>
    fetch(`${url}/v1/models`, { headers: { authorization: `Bearer key-${keyId}` } }).then((r) => r.status)
  )

describe("concurrent reloads", () => {
  it("run one at a time, in the order they were asked for", async () => {
    const events: Array<string> = []
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const config = yield* ServerConfig.decode(fileJson("initial"))
          const decoded = yield* GatewayConfig.decode(config.gateway)
          const context = yield* Layer.build(gatewayOf(decoded))
          const firstArrived = yield* Deferred.make<void>()
          const firstReleased = yield* Deferred.make<void>()
          const prepareReload = (next: ServerConfig.ServerConfig) =>
            Effect.gen(function* () {
              const id = next.keys[0]?.id ?? "none"
              events.push(`start ${id}`)
              if (id === "first") {
                yield* Deferred.succeed(firstArrived, undefined)
                yield* Deferred.await(firstReleased)
              }
              events.push(`end ${id}`)
              return Launch.serverOptions(next, decoded)
            })
          const server = yield* Server.make({ ...Launch.serverOptions(config, decoded), prepareReload }).pipe(
            Effect.provide(context)
          )
          const first = yield* Effect.fork(server.reload(yield* ServerConfig.decode(fileJson("first"))))
          yield* Deferred.await(firstArrived)
          const second = yield* Effect.fork(server.reload(yield* ServerConfig.decode(fileJson("second"))))
          // The second reload's fiber gets its turns; it must wait for the first to finish.
          for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
          expect(events).toEqual(["start first"])
          expect(yield* status(server.url, "initial")).toBe(200)
          yield* Deferred.succeed(firstReleased, undefined)
          yield* Fiber.join(first)
          yield* Fiber.join(second)
          expect(events).toEqual(["start first", "end first", "start second", "end second"])
          expect(yield* status(server.url, "second")).toBe(200)
          expect(yield* status(server.url, "first")).toBe(401)
          expect(yield* status(server.url, "initial")).toBe(401)
        })
      )
    )
  })
})
