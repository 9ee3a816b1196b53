import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import * as OpenAi from "@modelgate/adapters/openai"
import { ModelCommand, ModelGateway } from "@modelgate/core"
import { Console, Effect, Layer } from "effect"

const Gateway = ModelGateway.layerCatalogue(["openai/gpt-4.1-mini"]).pipe(
  Layer.provide(OpenAi.layerConfig()),
  Layer.provide(NodeHttpClient.layerUndici)
)

const main = Effect.gen(function* () {
  const messages = [{ _tag: "user", content: "Say hello in French." }]
  const command = yield* ModelCommand.decodeUnknown({ workflow: "chat", tenant: "me", messages })
  const result = yield* ModelGateway.generate(command)
  yield* Console.log(result.content.text, result.evidence.cost.actual)
})

NodeRuntime.runMain(main.pipe(Effect.provide(Gateway)))
