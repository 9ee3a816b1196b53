/**
 * `POST /v1/chat/completions`: one command per request through `generate` (JSON) or `stream`
 * (SSE in the OpenAI chunk format, evidence in the last chunk before `data: [DONE]`). The call runs
 * interruptibly under the request's fiber, so a client that disconnects cancels it.
 *
 * @internal
 */
import { HttpServerResponse } from "@effect/platform"
import { type Errors, ModelCommand, type ModelResult, type StreamEvent, Tenancy } from "@modelgate/core"
import { Chunk, Effect, Option, Stream } from "effect"
import { randomUUID } from "node:crypto"
import * as ChatFast from "./chatFast.js"
import * as ChatWire from "./chatWire.js"
import * as ErrorWire from "./errorWire.js"
import { evidenceHeaders } from "./evidenceWire.js"
import * as Request from "./request.js"

const encoder = new TextEncoder()

const gatewayFailure = (error: Errors.GatewayError) =>
  new Request.WireFailure({ error: ErrorWire.fromGatewayError(error) })

const totalTokens = (usage: ModelResult.Usage) => usage.inputTokens + usage.outputTokens

/** An error after the stream was committed, as the OpenAI SDK reads it (`data: {"error": …}`). */
export const errorFrame = (error: ErrorWire.WireError) => `data: ${JSON.stringify(ErrorWire.errorBody(error))}\n\n`

/** The leading events of a stream up to the first content (or `Final`); errors before it fail. */
export const pullUntilContent = (
  pull: Effect.Effect<Chunk.Chunk<StreamEvent.StreamEvent>, Option.Option<Errors.GatewayError>>
) =>
  Effect.gen(function* () {
    let buffered = Chunk.empty<StreamEvent.StreamEvent>()
    let route: string | undefined
    for (;;) {
      const next = yield* pull.pipe(
        Effect.interruptible,
        Effect.mapError((e) =>
          Option.match(e, {
            onNone: () => new Request.WireFailure({ error: ErrorWire.internal }),
            onSome: gatewayFailure
          })
        )
      )
      buffered = Chunk.appendAll(buffered, next)
      for (const event of next) if (event._tag === "RouteSelected") route = event.target
      if (Chunk.some(next, (e) => e._tag !== "RouteSelected")) return { buffered, route }
    }
  })

/** The rest of a pulled stream, as a Stream again. */
export const rest = <A, E>(buffered: Chunk.Chunk<A>, pull: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>>) =>
  Stream.concat(Stream.fromChunk(buffered), Stream.repeatEffectChunkOption(Effect.interruptible(pull)))

const readBody = Request.bodyOf(ChatWire.ChatRequest, ChatFast.chatRequest)

export const handler = (env: Request.Env) =>
  Request.answer(
    Effect.gen(function* () {
      const { key, body, workflow } = yield* Request.intake(env, readBody, "chat")
      const problem = ChatWire.unsupported(body, workflow.structured)
      if (problem !== undefined) return yield* Request.fail(ErrorWire.invalidBody([problem]))
      const limits = yield* Request.headerLimits
      const command = yield* ModelCommand.decodeUnknown({
        ...ChatWire.commandOf(body),
        ...limits,
        workflow: workflow.name,
        tenant: key.tenant
      }).pipe(Effect.mapError(Request.invalidCommand))
      const settle = yield* Request.takeRate(env, key)
      const created = env.createdAt()
      if (body.stream !== true) {
        const result = yield* env.gateway.generate(command).pipe(
          Tenancy.vouch(Request.identityOf(key)),
          Effect.interruptible,
          Effect.tapError((e) =>
            Effect.sync(() => settle(e.attempts.reduce((n, a) => n + (a.usage ? totalTokens(a.usage) : 0), 0)))
          ),
          Effect.mapError(gatewayFailure)
        )
        settle(totalTokens(result.evidence.usage))
        return HttpServerResponse.unsafeJson(ChatWire.completionOf(result, body.model, created), {
          headers: evidenceHeaders(result.evidence)
        })
      }
      const pull = yield* Stream.toPull(
        Stream.provideService(env.gateway.stream(command), Tenancy.CurrentIdentity, Request.identityOf(key))
      )
      const head = yield* pullUntilContent(pull)
      const render = ChatWire.makeChunker(
        `chatcmpl-${randomUUID()}`,
        body.model,
        created,
        body.stream_options?.include_usage === true
      )
      const frames = rest(head.buffered, pull).pipe(
        Stream.tap((event) =>
          event._tag === "Final" ? Effect.sync(() => settle(totalTokens(event.result.evidence.usage))) : Effect.void
        ),
        Stream.mapConcat(render),
        Stream.catchAll((error) => Stream.make(errorFrame(ErrorWire.fromGatewayError(error)))),
        Stream.map((text) => encoder.encode(text))
      )
      const headers: Record<string, string> = { "cache-control": "no-cache", "x-accel-buffering": "no" }
      if (head.route !== undefined) headers["x-modelgate-route"] = head.route
      return HttpServerResponse.stream(frames, { contentType: "text/event-stream", headers })
    })
  )
