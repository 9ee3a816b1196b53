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
import { type Limits, type MetricsSettings, type ServerConfig, ServerConfigError } from "./ServerConfig.js"

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
  /**
   * The step `Running.reload` runs before it swaps: validates a new configuration, reloads the
   * gateway on it and gives the server's options over it (`Launch.start` gives it), or fails
   * having changed nothing. Absent: `reload` refuses.
   */
  readonly prepareReload?: ((config: ServerConfig) => Effect.Effect<Options, ServerConfigError>) | undefined
  /** `GET /metrics` (Prometheus); absent: served, with no key. Read at start (a change needs a restart). */
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
  /**
   * Applies a new configuration of the same server, all or nothing, one reload at a time: checks
   * it whole (every problem in one `ServerConfigError`, nothing changed), reloads the gateway, then
   * swaps the keys, aliases, workflows and live limits in one assignment. Requests already under
   * way finish on the configuration they started with. Returns the gateway's new config version.
   */
  readonly reload: (config: ServerConfig) => Effect.Effect<ModelGateway.ConfigVersion, ServerConfigError>
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

/** The platform handlers of one environment (built once per configuration). */
interface Handlers {
  readonly responses: ReturnType<typeof Responses.handler>
  readonly embeddings: ReturnType<typeof Embeddings.handler>
  readonly models: ReturnType<typeof models>
  readonly model: ReturnType<typeof model>
}

const handlersOf = (env: Request.Env): Handlers => ({
  responses: Responses.handler(env),
  embeddings: Embeddings.handler(env),
  models: models(env),
  model: model(env)
})

/**
 * The platform routes: every route but `POST /v1/chat/completions`, which the `node:http` listener
 * answers first (`internal/nodeChat.ts`). Each request runs the handlers current when it arrives.
 */
const router = (
  tracker: Request.Tracker,
  handlers: { readonly current: Handlers },
  metrics: MetricsSettings | undefined
) =>
  HttpRouter.empty.pipe(
    HttpRouter.post(
      "/v1/responses",
      Effect.suspend(() => handlers.current.responses)
    ),
    HttpRouter.post(
      "/v1/embeddings",
      Effect.suspend(() => handlers.current.embeddings)
    ),
    HttpRouter.get(
      "/v1/models",
      Effect.suspend(() => handlers.current.models)
    ),
    HttpRouter.get(
      "/v1/models/:id",
      Effect.suspend(() => handlers.current.model)
    ),
    HttpRouter.concat(MetricsRoute.router(metrics)),
    HttpRouter.get("/healthz", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))),
    HttpRouter.get(
      "/readyz",
      Effect.sync(() =>
        tracker.draining
          ? HttpServerResponse.unsafeJson({ status: "draining" }, { status: 503 })
          : HttpServerResponse.unsafeJson({ status: "ready" })
      )
    ),
    HttpRouter.catchAll(() => Effect.succeed(Request.errorResponse(ErrorWire.notFound)))
  )

const noReload = () =>
  Effect.fail(new ServerConfigError({ problems: ["this server was started without a way to reload"] }))

/**
 * `Running.reload`: `prepare` (which checks everything and reloads the gateway, or fails having
 * changed nothing), then `swap`, one reload at a time (waiting for its turn can be interrupted,
 * the reload itself cannot); logged either way (no secrets: counts and versions, problems by path).
 */
const reloadOf = (prepare: Options["prepareReload"], gateway: ModelGateway.Service, swap: (next: Options) => void) =>
  Effect.map(
    Effect.makeSemaphore(1),
    (oneAtATime) => (config: ServerConfig) =>
      oneAtATime.withPermits(1)(
        // Uninterruptible once it runs: the gateway reloaded is always followed by the swap.
        Effect.gen(function* () {
          const next = yield* (prepare ?? noReload)(config)
          swap(next)
          const configVersion = yield* gateway.configVersion
          yield* Effect.annotateLogs(Effect.logInfo("modelgate server: configuration reloaded"), {
            configVersion,
            policyVersions: next.gatewayConfig.workflows.map((w) => `${w.name}@${w.policyVersion}`).join(" "),
            keys: config.keys.length,
            aliases: Object.keys(next.aliases).length
          })
          return configVersion
        }).pipe(
          Effect.uninterruptible,
          Effect.tapError((error) =>
            Effect.annotateLogs(Effect.logWarning("modelgate server: configuration reload rejected"), {
              problems: error.problems.join("; ")
            })
          )
        )
      )
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
    const envOf = (next: Options): Request.Env => ({
      keys: next.keys,
      aliases: next.aliases,
      workflows: workflowsOf(next.gatewayConfig),
      limits: next.limits,
      rateLimits,
      gateway,
      tracker,
      createdAt: () => Math.floor(Date.now() / 1000)
    })
    const live: Request.Live = { current: envOf(options) }
    const handlers = { current: handlersOf(live.current) }
    const server = nodeServer(options.limits, tracker)
    const app = yield* HttpRouter.toHttpApp(router(tracker, handlers, options.metrics))
    // No platform span per request: the gateway's call span carries the call (see docs/server.md).
    const platform = yield* NodeHttpServer.makeHandler(app).pipe(
      HttpMiddleware.withTracerDisabledWhenEffect(() => true)
    )
    // The chat endpoint straight from node:http (see `internal/nodeChat.ts`); the rest on the router.
    const chat = NodeChat.listener(live, yield* Effect.runtime<never>())
    server.on("request", (req, res) => {
      if (!chat(req, res)) platform(req, res)
    })
    const port = yield* listen(server, options.host, options.port)
    const drained = yield* Deferred.make<void>()
    const shutdown = Effect.gen(function* () {
      tracker.draining = true
      server.close(() => Deferred.unsafeDone(drained, Effect.void))
      server.closeIdleConnections()
      const deadline = Date.now() + live.current.limits.shutdownGraceMs
      while (tracker.inflight > 0 && Date.now() < deadline) yield* Effect.sleep("20 millis")
      server.closeAllConnections()
      yield* Deferred.await(drained).pipe(Effect.timeout("1 second"), Effect.ignore)
    })
    const reload = reloadOf(options.prepareReload, gateway, (next) => {
      // One synchronous block: a request arriving after it sees the new environment and handlers.
      live.current = envOf(next)
      handlers.current = handlersOf(live.current)
    })
    return {
      url: `http://${options.host}:${port}`,
      port,
      inflight: () => tracker.inflight,
      shutdown,
      reload: yield* reload
    }
  })
