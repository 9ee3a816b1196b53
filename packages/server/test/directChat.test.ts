/**
 * The direct chat call (the gateway's generate as the request's fiber, answered from its
 * observer): a defect of the call is the OpenAI 500, never a hung or dropped connection.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import * as OpenAi from "@modelgate/adapters/openai"
import { GatewayConfig, ModelGateway, RateLimitStore } from "@modelgate/core"
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayConfig, Ticket } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import * as Server from "../src/Server.js"
import { ServerConfig } from "../src/ServerConfig.js"

const key = "mg-direct-test-key"
const scope = Effect.runSync(Scope.make())
let url = ""

beforeAll(async () => {
  // A real gateway (its provider never called) whose generate dies.
  const gateway = ModelGateway.layerJson(gatewayConfig, { schemas: { Ticket } }).pipe(
    ModelGateway.withDefaults(),
    Layer.provide(
      OpenAi.layer({ id: "openai", baseUrl: "http://127.0.0.1:9/v1" }).pipe(Layer.provide(HttpTransport.layerUndici()))
    ),
    Layer.provide(NodeHttpClient.layerUndici)
  )
  const running = await Effect.runPromise(
    Effect.gen(function* () {
      const real = yield* ModelGateway.ModelGateway
      const config = yield* Schema.decodeUnknown(ServerConfig)({
        listen: { host: "127.0.0.1", port: 0 },
        keys: [{ id: "k", sha256: hashKey(key), tenant: "acme", workflows: ["*"] }],
        providers: [{ id: "openai", kind: "openai", baseUrl: "http://127.0.0.1:9/v1" }],
        gateway: gatewayConfig,
        recorder: "none"
      })
      return yield* Server.make(Launch.serverOptions(config, yield* GatewayConfig.decode(config.gateway))).pipe(
        Effect.provideService(ModelGateway.ModelGateway, { ...real, generate: () => Effect.die("boom") }),
        Effect.provide(RateLimitStore.layerMemory)
      )
    }).pipe(Effect.provide(gateway), Scope.extend(scope))
  )
  url = running.url
})

afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

describe("the direct chat call", () => {
  it("answers a defect of the call with the OpenAI 500 and no detail", async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hello" }] })
    })
    expect(response.status).toBe(500)
    const body = await response.json()
    expect(body).toStrictEqual({
      error: { message: "internal error", type: "server_error", param: null, code: "internal_error" }
    })
    expect(JSON.stringify(body)).not.toContain("boom")
  })
})
