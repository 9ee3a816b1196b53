/** A provider adapter that only embeds, for the embedding-budget tests. */
import { ProviderAdapter } from "@modelgate/core"
import { Usage } from "@modelgate/core/ModelResult"
import { Effect, Stream } from "effect"

/**
 * An embedder for `provider` that answers at once with a `[0.5, 0.25]` vector per input,
 * reporting `usage` input tokens (none: no usage reported, as Gemini does).
 */
export const instantEmbedder = (provider: string, usage: number | undefined) =>
  ProviderAdapter.layer(
    provider,
    Effect.succeed({
      generate: () => Effect.dieMessage("not generated in these tests"),
      stream: () => Stream.dieMessage("not streamed in these tests"),
      embed: (request: ProviderAdapter.EmbedRequest) =>
        Effect.succeed({
          vectors: request.inputs.map(() => [0.5, 0.25]),
          usage: usage === undefined ? undefined : new Usage({ inputTokens: usage, outputTokens: 0 }),
          modelVersion: undefined,
          requestId: undefined,
          httpStatus: 200
        })
    })
  )
