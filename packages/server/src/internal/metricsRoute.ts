/**
 * `GET /metrics`: the process's Effect metrics (what core records per call, see
 * `@modelgate/core/Telemetry`) rendered in the Prometheus text format at scrape time. Nothing is
 * recorded here and nothing runs per model request: a scrape reads `Metric.snapshot`.
 *
 * Outside the admission bound (a scrape answers while the server is saturated or draining). With a
 * metrics key configured, a scrape needs `Authorization: Bearer <it>`: the presented token is hashed
 * like an API key and its digest compared with the stored one in constant time. API keys are not
 * accepted: a client key reads nothing of other tenants, and a scraper needs no model access.
 *
 * @internal
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Metric } from "effect"
import * as Crypto from "node:crypto"
import { bearerOf, hashKey, maxKeyLength } from "../Keys.js"
import type { MetricsSettings } from "../ServerConfig.js"
import * as ErrorWire from "./errorWire.js"
import * as Prometheus from "./prometheus.js"
import { errorResponse } from "./request.js"

/** Whether an `Authorization` header may scrape: always without a key, else only with its bearer. */
const scrapeAccess = (key: MetricsSettings["key"]): ((authorization: string | undefined) => boolean) => {
  if (key === undefined) return () => true
  const digest = Buffer.from(key.sha256.toLowerCase(), "hex")
  return (authorization) => {
    const token = bearerOf(authorization)
    if (token === undefined || token.length > maxKeyLength) return false
    return Crypto.timingSafeEqual(digest, Buffer.from(hashKey(token), "hex"))
  }
}

const unauthorized = ErrorWire.wire(
  401,
  "invalid_request_error",
  "invalid_metrics_key",
  "missing or invalid metrics key (Authorization: Bearer <key>)",
  { "www-authenticate": "Bearer" }
)

const scrape = Effect.map(Metric.snapshot, (pairs) =>
  HttpServerResponse.text(Prometheus.render(pairs), { contentType: Prometheus.contentType })
)

/** The route's handler for a metrics key (open without one). */
const handler = (key: MetricsSettings["key"]) => {
  const allowed = scrapeAccess(key)
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    allowed(request.headers.authorization) ? scrape : Effect.succeed(errorResponse(unauthorized))
  )
}

/**
 * The router of `GET /metrics` for `settings` (enabled and open when absent); disabled, an empty
 * router, so the path answers like a path that does not exist.
 */
export const router = (settings: MetricsSettings | undefined): HttpRouter.HttpRouter =>
  settings?.enabled === false ? HttpRouter.empty : HttpRouter.get(HttpRouter.empty, "/metrics", handler(settings?.key))
