/**
 * The steps every model request takes before the gateway: the concurrency bound, the key, the
 * body (size-capped, JSON, decoded by a Schema), the workflow the key may call, the key's rate
 * limit, and the command. Each step fails with a `WireFailure` carrying the HTTP answer.
 *
 * @internal
 */
import { HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { ModelGateway, RateLimitStore, Tenancy, Workflow } from "@modelgate/core"
import { Clock, Data, Effect, Either, Option, type ParseResult, Schema } from "effect"
import { bearerOf, type KeyRing } from "../Keys.js"
import { type ApiKey, issuePaths, type Limits } from "../ServerConfig.js"
import * as ErrorWire from "./errorWire.js"

/** What a workflow is, as far as the wire cares. */
export interface WorkflowInfo {
  readonly name: Workflow.WorkflowName
  readonly structured: boolean
  readonly embedding: boolean
}

/** In-flight accounting shared with the node server (counted from request to socket close). */
export interface Tracker {
  inflight: number
  draining: boolean
}

/** Everything the handlers need. */
export interface Env {
  readonly keys: KeyRing
  readonly aliases: Readonly<Record<string, string>>
  readonly workflows: ReadonlyMap<string, WorkflowInfo>
  readonly limits: Limits
  readonly rateLimits: RateLimitStore.Service
  readonly gateway: ModelGateway.Service
  readonly tracker: Tracker
  readonly createdAt: () => number
}

/**
 * The environment of the running configuration: a reload swaps `current` whole (one assignment).
 * A request reads it once, when it arrives, and keeps that environment to its end.
 */
export interface Live {
  current: Env
}

/** An HTTP answer short of the gateway (a refused request). */
export class WireFailure extends Data.TaggedError("WireFailure")<{ readonly error: ErrorWire.WireError }> {}

export const fail = (error: ErrorWire.WireError) => Effect.fail(new WireFailure({ error }))

/** The OpenAI error JSON response of a wire error. */
export const errorResponse = (error: ErrorWire.WireError) =>
  HttpServerResponse.unsafeJson(ErrorWire.errorBody(error), {
    status: error.status,
    headers: error.headers ?? {}
  })

/** Runs a handler, turning a refusal (and any defect) into its OpenAI error response. */
export const answer = <R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, WireFailure, R>) =>
  handler.pipe(
    Effect.catchTag("WireFailure", (f) => Effect.succeed(errorResponse(f.error))),
    Effect.catchAllDefect(() => Effect.succeed(errorResponse(ErrorWire.internal)))
  )

const shuttingDown = ErrorWire.wire(503, "server_error", "shutting_down", "the server is shutting down", {
  "retry-after": "1"
})

/** The refusal past the concurrency bound (or while draining), if any. */
export const admission = (env: Env): ErrorWire.WireError | undefined =>
  env.tracker.draining
    ? shuttingDown
    : env.tracker.inflight > env.limits.maxConcurrentRequests
      ? ErrorWire.overloaded
      : undefined

/** Past the concurrency bound (or while draining): a fast 503. */
export const admit = (env: Env) => {
  const refused = admission(env)
  return refused === undefined ? Effect.void : fail(refused)
}

/** The identity a key vouches for: its tenant, by the server's key check, with the key's id as subject. */
export const identityOf = (key: ApiKey): Tenancy.Identity => ({
  tenant: key.tenant,
  authority: "api-key",
  subject: key.id
})

/** The key of an `Authorization` header's bearer token, if any. */
export const keyOf = (env: Env, authorization: string | undefined): ApiKey | undefined => {
  const token = bearerOf(authorization)
  return token === undefined ? undefined : env.keys.verify(token)
}

/** The key of the request's bearer token, else 401. */
export const authenticate = (env: Env) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const key = keyOf(env, request.headers.authorization)
    return key === undefined ? fail(ErrorWire.unauthorized) : Effect.succeed(key)
  })

/** The 413 of a body over `limit` bytes. */
export const tooLarge = (limit: number) =>
  ErrorWire.wire(413, "invalid_request_error", "body_too_large", `the request body exceeds ${limit} bytes`)

/**
 * A decoder of a JSON body text by `schema` (built once): problems by path, never values. `fast`
 * may answer the common shapes without the Schema walk: it must return exactly what the schema
 * decodes, or `undefined` to leave the body to the schema.
 */
export const bodyDecoder = <A, I>(schema: Schema.Schema<A, I>, fast?: (json: unknown) => A | undefined) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all" })
  return (text: string): Either.Either<A, ErrorWire.WireError> => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return Either.left(ErrorWire.invalidBody(["the body is not JSON"]))
    }
    const quick = fast?.(json)
    if (quick !== undefined) return Either.right(quick)
    return Either.mapLeft(decode(json), (e: ParseResult.ParseError) => ErrorWire.invalidBody(issuePaths(e)))
  }
}

/** A reader of the JSON body decoded by `schema` (see {@link bodyDecoder}), at most `maxBodyBytes`. */
export const bodyOf = <A, I>(schema: Schema.Schema<A, I>, fast?: (json: unknown) => A | undefined) => {
  const decode = bodyDecoder(schema, fast)
  return (env: Env) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const limit = env.limits.maxBodyBytes
      const declared = Number(request.headers["content-length"] ?? "0")
      if (declared > limit) return yield* fail(tooLarge(limit))
      const text = yield* request.text.pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(limit)),
        Effect.interruptible,
        Effect.mapError(() => new WireFailure({ error: tooLarge(limit) }))
      )
      return yield* Either.mapLeft(decode(text), (error) => new WireFailure({ error }))
    })
}

/** The workflow a request's `model` names (or aliases) and the key may call, if any. */
export const workflowOf = (
  env: Env,
  key: ApiKey,
  model: string,
  kind: "chat" | "embedding"
): WorkflowInfo | undefined => {
  const name = env.aliases[model] ?? model
  const info = env.workflows.get(name)
  return info === undefined || !env.keys.allows(key, name) || info.embedding !== (kind === "embedding")
    ? undefined
    : info
}

/** {@link workflowOf}, else 404. */
export const workflowFor = (env: Env, key: ApiKey, model: string, kind: "chat" | "embedding") => {
  const info = workflowOf(env, key, model, kind)
  return info === undefined ? fail(ErrorWire.modelNotFound()) : Effect.succeed(info)
}

/**
 * The common head of every endpoint: admitted (not draining, not overloaded), authenticated, the
 * body read by `readBody`, and the workflow its `model` names for the key.
 */
export const intake = <A extends { readonly model: string }, E, R>(
  env: Env,
  readBody: (env: Env) => Effect.Effect<A, E, R>,
  kind: "chat" | "embedding"
) =>
  Effect.gen(function* () {
    yield* admit(env)
    const key = yield* authenticate(env)
    const body = yield* readBody(env)
    const workflow = yield* workflowFor(env, key, body.model, kind)
    return { key, body, workflow }
  })

/** A slot of the key's rate limit (the token count is corrected after the call), else 429. */
export const takeRate = (env: Env, key: ApiKey) =>
  Effect.gen(function* () {
    const limit = key.rateLimit
    if (limit === undefined) return () => {}
    const now = yield* Clock.currentTimeMillis
    const rateKey = `modelgate-server:key:${key.id}`
    const admission = yield* env.rateLimits
      .take({
        key: rateKey,
        tokens: 0,
        requestsPerMinute: limit.requestsPerMinute,
        tokensPerMinute: limit.tokensPerMinute,
        now
      })
      .pipe(
        Effect.mapError(
          () =>
            new WireFailure({
              error: ErrorWire.wire(503, "server_error", "store_unavailable", "the rate limit store is unavailable", {
                "retry-after": "1"
              })
            })
        )
      )
    if (admission._tag === "Limited")
      return yield* fail(ErrorWire.rateLimited(Math.max(1, Math.ceil((admission.resetsAt - now) / 1000))))
    const window = admission.window
    return (tokens: number) => {
      if (tokens > 0) env.rateLimits.adjust(rateKey, window, tokens)
    }
  })

const positive = (text: string | undefined, integer: boolean): number | undefined => {
  if (text === undefined) return undefined
  const value = Number(text)
  return Number.isFinite(value) && value > 0 && (!integer || Number.isInteger(value)) ? value : Number.NaN
}

/** The shape core accepts for `requestId` (checked here so a bad header is named as the header). */
const requestIdShape = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * The per-call fields a client may add by header: the limits, each only ever tighter than the
 * workflow's (core takes the smaller) — `x-modelgate-timeout-ms` (the call's deadline) and
 * `x-modelgate-max-cost` (USD) — and `x-request-id`, the caller's request id (the command's
 * `requestId`: 1 to 128 characters of `A-Z a-z 0-9 . _ : -`). A malformed value is a 400.
 */
export const headerLimits = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => limitsOf(request.headers))

/** Request headers as either server gives them (Node joins repeated custom headers with `, `). */
export type Headers = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const one = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : undefined

/** {@link headerLimits} of the headers themselves. */
export const limitsOf = (headers: Headers) => {
  const timeout = positive(one(headers["x-modelgate-timeout-ms"]), true)
  const maxCost = positive(one(headers["x-modelgate-max-cost"]), false)
  const requestId = one(headers["x-request-id"])
  if (Number.isNaN(timeout)) return fail(ErrorWire.invalidBody(["x-modelgate-timeout-ms: a positive integer"]))
  if (Number.isNaN(maxCost)) return fail(ErrorWire.invalidBody(["x-modelgate-max-cost: a positive number"]))
  if (requestId !== undefined && !requestIdShape.test(requestId)) {
    return fail(ErrorWire.invalidBody(["x-request-id: 1 to 128 characters of A-Z a-z 0-9 . _ : -"]))
  }
  const fields: { timeout?: number; maxCost?: number; requestId?: string } = {}
  if (timeout !== undefined) fields.timeout = timeout
  if (maxCost !== undefined) fields.maxCost = maxCost
  if (requestId !== undefined) fields.requestId = requestId
  return Effect.succeed(fields)
}

/** A ParseError of core's command decoding as a 400 (its message names paths only). */
export const invalidCommand = (error: ParseResult.ParseError) =>
  new WireFailure({ error: ErrorWire.invalidBody([error.message.replace(/^invalid (embed )?command: /, "")]) })
