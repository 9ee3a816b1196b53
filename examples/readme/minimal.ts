// A first call in 15 lines of configuration: one catalogue target, one workflow. Run it with
// `OPENAI_API_KEY=… node --conditions=source --import tsx readme/minimal.ts` from examples/;
// `examples/test/minimal.test.ts` counts the configuration's lines and runs it against ScriptedProvider.
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import * as OpenAi from "@modelgate/adapters/openai"
import { Budgets, GatewayConfig, ModelCommand, ModelGateway } from "@modelgate/core"
import { Effect, Layer, Schema } from "effect"
import { pathToFileURL } from "node:url"

export const Ticket = Schema.Struct({
  category: Schema.Literal("billing", "technical", "other"),
  confidence: Schema.Number
})

// Configuration (everything down to the closing `})`):
const mini = "model://openai/gpt-4.1-mini@eu"
export const config = GatewayConfig.make({
  targets: [{ ref: mini, catalogue: "openai/gpt-4.1-mini", regions: ["eu"], dataClasses: ["internal"] }],
  workflows: [
    {
      name: "ticket.classify",
      prompt: { id: "classify" },
      output: { schema: "Ticket", schemaVersion: "1" },
      route: [mini],
      timeout: 3000,
      regions: ["eu"],
      dataClass: "internal"
    }
  ]
})

export const GatewayLive = ModelGateway.layerJson(config, { schemas: { Ticket } }).pipe(
  ModelGateway.withDefaults({ budgets: Budgets.layerMemory({ tenants: { acme: { limit: 5 } } }) }),
  Layer.provide(OpenAi.layerConfig()),
  Layer.provide(NodeHttpClient.layerUndici)
)

export const classify = (text: string) =>
  Effect.gen(function* () {
    const command = yield* ModelCommand.decodeUnknown({
      workflow: "ticket.classify",
      tenant: "acme",
      messages: [{ _tag: "user", content: text }]
    })
    const { value, result } = yield* ModelGateway.generateObject(command, Ticket)
    yield* Effect.log(value.category, result.evidence.model, result.evidence.cost.actual)
    return value
  })

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  NodeRuntime.runMain(classify("I was charged twice").pipe(Effect.provide(GatewayLive)))
}
