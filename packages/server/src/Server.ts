/**
 * The OpenAI-compatible HTTP server: `@effect/platform`'s `HttpRouter` on a hardened `node:http`
 * server (header and body caps, header/request/idle timeouts, a bound on requests in flight with a
 * fast 503 past it, graceful shutdown that drains in-flight calls within a bound).
 *
 * Routes: `POST /v1/chat/completions` (answered straight from the `node:http` listener),
 * `POST /v1/responses`, `POST /v1/embeddings`, `GET /v1/models`, `GET /v1/models/:id`,
 * `GET /healthz`, `GET /readyz`, `GET /metrics` (Prometheus; outside the admission bound) (on the router).
 *
 * @since 0.1.0
 */
import { HttpMiddleware, HttpRouter, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { HttpServerError } from "@effect/platform"
import { type GatewayConfig, ModelGateway, RateLimitStore } from "@modelgate/core"
import { Deferred, Effect, type Scope } from "effect"
import * as Http from "node:http"
import type { KeyRing } from "./Keys.js"
import * as Embeddings from "./internal/embeddings.js"
import * as ErrorWire from "./internal/errorWire.js"
import * as MetricsRoute from "./internal/metricsRoute.js"
import * as NodeChat from "./internal/nodeChat.js"
import * as Request from "./internal/request.js"
import * as Responses from "./internal/responses.js"
import type { Limits, MetricsSettings } from "./ServerConfig.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly host: string
  /** 0 picks a free port. */
  readonly port: number
  readonly keys: KeyRing
  readonly aliases: Readonly<Record<string, string>>
  readonly limits: Limits
  /** The gateway's decoded configuration: which workflows exist, which give structured output. */
  readonly gatewayConfig: GatewayConfig.GatewayConfig
  /** `GET /metrics` (Prometheus); absent: served, with no key. */
  readonly metrics?: MetricsSettings | undefined
}

/**
 * A running server.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Running {
  /** `http://host:port` */
  readonly url: string
  readonly port: number
  /** Requests in flight now (from arrival to the end of the response). */
  readonly inflight: () => number
  /**
   * Stops accepting connections, lets in-flight calls finish within `limits.shutdownGraceMs`, then
   * cuts what is left (those calls are cancelled: budget settled, record written).
   */
  readonly shutdown: Effect.Effect<void>
}

const workflowsOf = (config: GatewayConfig.GatewayConfig): ReadonlyMap<string, Request.WorkflowInfo> =>
  new Map(
    config.workflows.map((w) => [
      w.name,
      { name: w.name, structured: w.output !== undefined, embedding: w.embedding !== undefined }
    ])
  )

const models = (env: Request.Env) =>
  Request.answer(
    Effect.gen(function* () {
      yield* Request.admit(env)
      const key = yield* Request.authenticate(env)
      const created = env.createdAt()
      const data = [...env.workflows.values()]
        .filter((w) => env.keys.allows(key, w.name))
        .map((w) => ({ id: w.name, object: "model", created, owned_by: "modelgate" }))
      const aliases = Object.entries(env.aliases)
        .filter(([, workflow]) => env.workflows.has(workflow) && env.keys.allows(key, workflow))
        .map(([alias]) => ({ id: alias, object: "model", created, owned_by: "modelgate" }))
      return HttpServerResponse.unsafeJson({ object: "list", data: [...data, ...aliases] })
    })
  )

const model = (env: Request.Env) =>
  Request.answer(
    Effect.gen(function* () {
      yield* Request.admit(env)
      const key = yield* Request.authenticate(env)
      const { id } = yield* HttpRouter.params
      const name = id === undefined ? undefined : (env.aliases[id] ?? id)
      if (id === undefined || name === undefined || !env.workflows.has(name) || !env.keys.allows(key, name))
        return yield* Request.fail(ErrorWire.modelNotFound())
      return HttpServerResponse.unsafeJson({ id, object: "model", created: env.createdAt(), owned_by: "modelgate" })
    })
  )

/**
 * The platform routes over an environment: every route but `POST /v1/chat/completions`, which the
 * `node:http` listener answers first (`internal/nodeChat.ts`).
 */
const router = (env: Request.Env, metrics: MetricsSettings | undefined) =>
  HttpRouter.empty.pipe(
    HttpRouter.post("/v1/responses", Responses.handler(env)),
    HttpRouter.post("/v1/embeddings", Embeddings.handler(env)),
    HttpRouter.get("/v1/models", models(env)),
    HttpRouter.get("/v1/models/:id", model(env)),
    HttpRouter.concat(MetricsRoute.router(metrics)),
    HttpRouter.get("/healthz", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))),
    HttpRouter.get(
      "/readyz",
      Effect.sync(() =>
        env.tracker.draining
          ? HttpServerResponse.unsafeJson({ status: "draining" }, { status: 503 })
          : HttpServerResponse.unsafeJson({ status: "ready" })
      )
    ),
    HttpRouter.catchAll(() => Effect.succeed(Request.errorResponse(ErrorWire.notFound)))
  )

/** A `node:http` server with the limits set, counting requests in flight into `tracker`. */
const nodeServer = (limits: Limits, tracker: Request.Tracker): Http.Server => {
  const server = Http.createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often the header and request timeouts are checked (Node's default is 30 s).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    noDelay: true
  })
  server.setTimeout(limits.idleTimeoutMs, (socket) => socket.destroy())
  server.maxHeadersCount = 100
  server.prependListener("request", (_req, res) => {
    tracker.inflight++
    res.once("close", () => {
      tracker.inflight--
    })
  })
  return server
}

/** Listens on `host:port` in the current scope (closed with it); the port bound. */
const listen = (server: Http.Server, host: string, port: number) =>
  Effect.acquireRelease(
    Effect.async<number, HttpServerError.ServeError>((resume) => {
      const onError = (cause: Error) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
      server.once("error", onError)
      server.listen({ host, port }, () => {
        server.off("error", onError)
        const address = server.address()
        resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
      })
    }),
    () =>
      Effect.async<void>((resume) => {
        if (!server.listening) return resume(Effect.void)
        server.close(() => resume(Effect.void))
      })
  )

/**
 * Serves the routes on a hardened node server in the current scope (closed with the scope).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (
  options: Options
): Effect.Effect<
  Running,
  HttpServerError.ServeError,
  Scope.Scope | ModelGateway.ModelGateway | RateLimitStore.RateLimitStore
> =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const rateLimits = yield* RateLimitStore.RateLimitStore
    const tracker: Request.Tracker = { inflight: 0, draining: false }
    const env: Request.Env = {
      keys: options.keys,
      aliases: options.aliases,
      workflows: workflowsOf(options.gatewayConfig),
      limits: options.limits,
      rateLimits,
      gateway,
      tracker,
      createdAt: () => Math.floor(Date.now() / 1000)
    }
    const server = nodeServer(options.limits, tracker)
    const app = yield* HttpRouter.toHttpApp(router(env, options.metrics))
    // No platform span per request: the gateway's call span carries the call (see docs/server.md).
    const platform = yield* NodeHttpServer.makeHandler(app).pipe(
      HttpMiddleware.withTracerDisabledWhenEffect(() => true)
    )
    // The chat endpoint straight from node:http (see `internal/nodeChat.ts`); the rest on the router.
    const chat = NodeChat.listener(env, yield* Effect.runtime<never>())
    server.on("request", (req, res) => {
      if (!chat(req, res)) platform(req, res)
    })
    const port = yield* listen(server, options.host, options.port)
    const drained = yield* Deferred.make<void>()
    const shutdown = Effect.gen(function* () {
      tracker.draining = true
      server.close(() => Deferred.unsafeDone(drained, Effect.void))
      server.closeIdleConnections()
      const deadline = Date.now() + options.limits.shutdownGraceMs
      while (tracker.inflight > 0 && Date.now() < deadline) yield* Effect.sleep("20 millis")
      server.closeAllConnections()
      yield* Deferred.await(drained).pipe(Effect.timeout("1 second"), Effect.ignore)
    })
    return {
      url: `http://${options.host}:${port}`,
      port,
      inflight: () => tracker.inflight,
      shutdown
    }
  })
