/**
 * `POST /v1/embeddings`: `input` (a string or strings) through an embedding workflow's `embed`;
 * vectors as float arrays (or base64 of little-endian float32 with `encoding_format: "base64"`).
 *
 * @internal
 */
import { HttpServerResponse } from "@effect/platform"
import { Embeddings, Tenancy } from "@modelgate/core"
import { Effect, Schema } from "effect"
import * as ErrorWire from "./errorWire.js"
import { evidenceHeaders } from "./evidenceWire.js"
import * as Request from "./request.js"

const EmbeddingsRequest = Schema.Struct({
  model: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  input: Schema.Union(Schema.String, Schema.Array(Schema.String).pipe(Schema.minItems(1))),
  encoding_format: Schema.optional(Schema.Literal("float", "base64")),
  dimensions: Schema.optional(Schema.Int),
  user: Schema.optional(Schema.String)
})

const base64 = (vector: ReadonlyArray<number>): string =>
  Buffer.from(new Float32Array(vector).buffer).toString("base64")

const readBody = Request.bodyOf(EmbeddingsRequest)

export const handler = (env: Request.Env) =>
  Request.answer(
    Effect.gen(function* () {
      const { key, body, workflow } = yield* Request.intake(env, readBody, "embedding")
      if (body.dimensions !== undefined)
        return yield* Request.fail(ErrorWire.invalidBody(["$.dimensions: the workflow's vector space decides"]))
      const inputs = typeof body.input === "string" ? [body.input] : body.input
      const limits = yield* Request.headerLimits
      const command = yield* Embeddings.decodeCommand({
        ...limits,
        workflow: workflow.name,
        tenant: key.tenant,
        inputs
      }).pipe(Effect.mapError(Request.invalidCommand))
      const settle = yield* Request.takeRate(env, key)
      const result = yield* env.gateway.embed(command).pipe(
        Tenancy.vouch(Request.identityOf(key)),
        Effect.interruptible,
        Effect.mapError((e) => new Request.WireFailure({ error: ErrorWire.fromGatewayError(e) }))
      )
      const usage = result.evidence.usage
      settle(usage.inputTokens)
      return HttpServerResponse.unsafeJson(
        {
          object: "list",
          model: body.model,
          data: result.vectors.map((vector, index) => ({
            object: "embedding",
            index,
            embedding: body.encoding_format === "base64" ? base64(vector) : vector
          })),
          usage: { prompt_tokens: usage.inputTokens, total_tokens: usage.inputTokens }
        },
        { headers: evidenceHeaders(result.evidence) }
      )
    })
  )
