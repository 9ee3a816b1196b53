/**
 * `POST /v1/chat/completions`: one command per request through `generate` (JSON) or `stream`
 * (SSE in the OpenAI chunk format, evidence in the last chunk before `data: [DONE]`): the call and
 * its answer, written by `nodeChat.ts` from the `node:http` listener, whose fiber a client that
 * disconnects interrupts (so it cancels the call). The call runs for the key's tenant: the fiber
 * that runs it has the key's identity in its context (`nodeChat.ts` runs it on a runtime per key,
 * so no request provides a service).
 *
 * @internal
 */
import { type Errors, ModelCommand, type ModelResult, type StreamEvent } from "@modelgate/core"
import { Chunk, Effect, Option, type Scope, Stream } from "effect"
import { randomUUID } from "node:crypto"
import type { ApiKey } from "../ServerConfig.js"
import * as ChatFast from "./chatFast.js"
import * as ChatWire from "./chatWire.js"
import * as ErrorWire from "./errorWire.js"
import { evidenceHeaders } from "./evidenceWire.js"
import * as Request from "./request.js"

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

/** The body decoder of the endpoint (fast path, then the Schema). */
export const decodeBody = Request.bodyDecoder(ChatWire.ChatRequest, ChatFast.chatRequest)

/** What a chat request answers, for either server to write: a JSON body, or SSE frames. */
export type Answer =
  | { readonly _tag: "Json"; readonly body: unknown; readonly headers: Record<string, string> }
  | { readonly _tag: "Sse"; readonly frames: Stream.Stream<string>; readonly headers: Record<string, string> }

/** The JSON answer of a result (`created`: when the call started, in seconds). */
export const jsonOf = (
  result: ModelResult.ModelResult,
  model: string,
  created: number
): Extract<Answer, { readonly _tag: "Json" }> => ({
  _tag: "Json",
  body: ChatWire.completionOf(result, model, created),
  headers: evidenceHeaders(result.evidence)
})

/** True when the request sets a header limit (`Request.limitsOf`). */
const hasHeaderLimits = (headers: Request.Headers): boolean =>
  headers["x-modelgate-timeout-ms"] !== undefined ||
  headers["x-modelgate-max-cost"] !== undefined ||
  headers["x-request-id"] !== undefined

/**
 * The common call in plain steps: a non-streaming request with no header limits, by a key with no
 * rate limit, whose command the fast path builds (`ChatFast.command`) — the gateway's generate, to
 * be answered by {@link jsonOf} — or its refusal (the same as {@link call}'s); `undefined` for
 * every other request ({@link call} then takes every step).
 */
export const direct = (
  env: Request.Env,
  headers: Request.Headers,
  key: ApiKey,
  body: ChatWire.ChatRequest,
  workflow: Request.WorkflowInfo
): Effect.Effect<ModelResult.ModelResult, Errors.GatewayError> | ErrorWire.WireError | undefined => {
  if (body.stream === true || key.rateLimit !== undefined || hasHeaderLimits(headers)) return undefined
  const problem = ChatWire.unsupported(body, workflow.structured)
  if (problem !== undefined) return ErrorWire.invalidBody([problem])
  const command = ChatFast.command(body, workflow.name, key.tenant)
  return command === undefined ? undefined : env.gateway.generate(command)
}

/**
 * The call of an admitted, authenticated request whose body is decoded and whose workflow the key
 * may call: the header limits, the command (by `ChatFast.command` when it can), the key's rate
 * limit, then `generate` or `stream`. A stream's frames pull from the gateway's stream within the
 * scope, so it must outlive them.
 */
export const call = (
  env: Request.Env,
  headers: Request.Headers,
  key: ApiKey,
  body: ChatWire.ChatRequest,
  workflow: Request.WorkflowInfo
): Effect.Effect<Answer, Request.WireFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const problem = ChatWire.unsupported(body, workflow.structured)
    if (problem !== undefined) return yield* Request.fail(ErrorWire.invalidBody([problem]))
    const limits = yield* Request.limitsOf(headers)
    const command =
      (hasHeaderLimits(headers) ? undefined : ChatFast.command(body, workflow.name, key.tenant)) ??
      (yield* ModelCommand.decodeUnknown({
        ...ChatWire.commandOf(body),
        ...limits,
        workflow: workflow.name,
        tenant: key.tenant
      }).pipe(Effect.mapError(Request.invalidCommand)))
    const settle = yield* Request.takeRate(env, key)
    const created = env.createdAt()
    if (body.stream !== true) {
      const result = yield* env.gateway.generate(command).pipe(
        Effect.interruptible,
        Effect.tapError((e) =>
          Effect.sync(() => settle(e.attempts.reduce((n, a) => n + (a.usage ? totalTokens(a.usage) : 0), 0)))
        ),
        Effect.mapError(gatewayFailure)
      )
      settle(totalTokens(result.evidence.usage))
      return jsonOf(result, body.model, created)
    }
    const pull = yield* Stream.toPull(env.gateway.stream(command))
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
      Stream.catchAll((error) => Stream.make(errorFrame(ErrorWire.fromGatewayError(error))))
    )
    const sseHeaders: Record<string, string> = { "cache-control": "no-cache", "x-accel-buffering": "no" }
    if (head.route !== undefined) sseHeaders["x-modelgate-route"] = head.route
    return { _tag: "Sse", frames, headers: sseHeaders } as const
  })
