// docs/effect-ai.md example. `examples/test/readmeEffectAi.test.ts` checks that the page shows exactly this code.
import { LanguageModel } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import * as EffectAi from "@modelgate/adapters/effect-ai"
import { ModelGateway } from "@modelgate/core"
import { Config, Context, Effect, Layer, Schema } from "effect"

const Ticket = Schema.Struct({ category: Schema.Literal("billing", "technical", "other"), confidence: Schema.Number })

// An @effect/ai provider used by modelgate: @effect/ai-openai (the Responses API) as provider "openai-responses".
const OpenAiResponses = EffectAi.providerAdapter("openai-responses", {
  model: (model) => OpenAiLanguageModel.layer({ model }),
  requestContext: (request) => Context.make(OpenAiLanguageModel.Config, { max_output_tokens: request.maxOutputTokens })
}).pipe(
  Layer.provide(OpenAiClient.layerConfig({ apiKey: Config.redacted("OPENAI_API_KEY") })),
  Layer.provide(NodeHttpClient.layerUndici)
)

const config = {
  targets: [
    {
      ref: "model://openai-responses/gpt-4.1-mini@eu",
      provider: "openai-responses",
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
      prompt: { id: "classify", version: "3" },
      timeout: 3000,
      output: { schema: "Ticket", schemaVersion: "1" },
      route: ["model://openai-responses/gpt-4.1-mini@eu"],
      regions: ["eu"],
      dataClass: "internal"
    }
  ]
}

const GatewayLive = ModelGateway.layerJson(config, { schemas: { Ticket } }).pipe(
  ModelGateway.withDefaults(),
  Layer.provide(OpenAiResponses)
)

// @effect/ai served by modelgate: LanguageModel code runs through the workflow's routing, budget and evidence.
const program = LanguageModel.generateObject({ prompt: "I was charged twice", schema: Ticket }).pipe(
  Effect.tap((response) => Effect.log(response.value, EffectAi.evidence(response)?.target)),
  Effect.catchAll((error) => Effect.logWarning(EffectAi.gatewayError(error)?._tag ?? error._tag)),
  Effect.provide(EffectAi.languageModel({ workflow: "ticket.classify", tenant: "acme" })),
  Effect.provide(GatewayLive)
)

NodeRuntime.runMain(program)
