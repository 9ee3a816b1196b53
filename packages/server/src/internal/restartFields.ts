/**
 * The parts of a server configuration a reload cannot apply to a running server: the listen
 * address (the socket is bound), the providers (adapters are built once), the stores (`redis`,
 * `budgets`, `concurrency`), the `recorder`, the `metrics` endpoint's settings, and the limits the `node:http` server takes at
 * construction. A reload that changes one of them is rejected, naming each.
 *
 * @internal
 */
import { isDeepStrictEqual } from "node:util"
import type { Limits, ServerConfig } from "../ServerConfig.js"

/** Top-level fields fixed for the life of the process. */
const fixedFields = ["listen", "providers", "redis", "recorder", "budgets", "concurrency", "metrics"] as const

/** Limits the `node:http` server is built with (the others are read per request or at shutdown). */
const fixedLimits = [
  "maxHeaderBytes",
  "headersTimeoutMs",
  "requestTimeoutMs",
  "keepAliveTimeoutMs",
  "idleTimeoutMs"
] as const satisfies ReadonlyArray<keyof Limits>

/** One problem per field of `next` that differs from `running` and needs a restart (paths, never values). */
export const restartProblems = (running: ServerConfig, next: ServerConfig): ReadonlyArray<string> => [
  ...fixedFields
    .filter((field) => !isDeepStrictEqual(running[field], next[field]))
    .map((field) => `$.${field} changed: it needs a restart`),
  ...fixedLimits
    .filter((field) => running.limits[field] !== next.limits[field])
    .map((field) => `$.limits.${field} changed: it needs a restart`)
]
