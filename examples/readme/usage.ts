// The complete program of docs/getting-started.md. `examples/test/readme.test.ts` checks that the page shows exactly this code.
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import * as OpenAi from "@modelgate/adapters/openai"
import { Budgets, ModelCommand, ModelGateway } from "@modelgate/core"
import { Effect, Layer, Schema } from "effect"

const Ticket = Schema.Struct({ category: Schema.Literal("billing", "technical", "other"), confidence: Schema.Number })

const config = {
  targets: [
    {
      ref: "model://openai/gpt-4.1-mini@eu",
      provider: "openai",
      model: "gpt-4.1-mini",
      regions: ["eu"],
      dataClasses: ["internal"],
      pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6, pricingVersion: "2026-11" },
      capabilities: { contextWindow: 128_000, maxOutputTokens: 4096, structuredOutput: { mode: "json_schema_strict" } }
    }
  ],
  workflows: [
    {
      name: "ticket.classify",
      policyVersion: "1",
      prompt: { id: "classify", version: "3" },
      timeout: 3000,
      output: { schema: "Ticket", schemaVersion: "1" },
      route: ["model://openai/gpt-4.1-mini@eu"],
      regions: ["eu"],
      dataClass: "internal"
    }
  ]
}

const GatewayLive = ModelGateway.layerJson(config, { schemas: { Ticket } }).pipe(
  // $5 a month for acme; concurrency, breakers, call records: the defaults (unbounded, none, one log line)
  ModelGateway.withDefaults({ budgets: Budgets.layerMemory({ tenants: { acme: { limit: 5 } } }) }),
  Layer.provide(OpenAi.layerConfig()),
  Layer.provide(NodeHttpClient.layerUndici)
)

const program = Effect.gen(function* () {
  const command = yield* ModelCommand.decodeUnknown({
    workflow: "ticket.classify",
    tenant: "acme",
    messages: [{ _tag: "user", content: "I was charged twice" }]
  })
  const result = yield* ModelGateway.generate(command)
  yield* Effect.log(result.content.value, result.evidence.target, result.evidence.cost.actual)
})

NodeRuntime.runMain(program.pipe(Effect.provide(GatewayLive)))
