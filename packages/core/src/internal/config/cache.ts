/**
 * Startup checks of a workflow's response cache (`Workflow.cache`): a positive TTL within 24 h, a
 * `global` scope only for a `"public"` data class, and no cache on an embedding workflow.
 */
import * as Duration from "effect/Duration"
import { globalCacheDataClass, type Workflow } from "../../Workflow.js"
import { ms, tooLong, tooLongDetail } from "./targets.js"

type At = (sub: string, problem: { reason: string; detail: string; fix?: string }) => void

/** The problems of `w.cache` (none without a cache). */
export const checkCache = (w: Workflow, at: At): void => {
  const cache = w.cache
  if (cache === undefined) return
  if (Duration.toMillis(cache.ttl) <= 0) {
    at(".cache.ttl", {
      reason: "NON_POSITIVE_CACHE_TTL",
      detail: `must be > 0, got ${ms(cache.ttl)}`,
      fix: "use a ttl above 0 ms, or remove cache to turn the cache off"
    })
  } else if (tooLong(cache.ttl)) {
    at(".cache.ttl", { reason: "DURATION_TOO_LONG", detail: tooLongDetail })
  }
  if (cache.scope === "global" && w.dataClass !== globalCacheDataClass) {
    at(".cache.scope", {
      reason: "CACHE_GLOBAL_SCOPE_NOT_ALLOWED",
      detail: `a global cache serves one tenant's answer to every tenant; the workflow's dataClass is ${JSON.stringify(w.dataClass)}, not ${JSON.stringify(globalCacheDataClass)}`,
      fix: `use scope "tenant", or, if the inputs hold nothing of a tenant's, set the workflow's dataClass to ${JSON.stringify(globalCacheDataClass)}`
    })
  }
  if (w.embedding !== undefined) {
    at(".cache", {
      reason: "CACHE_ON_EMBEDDING_WORKFLOW",
      detail: "embedding workflows are not cached",
      fix: "remove cache from this workflow"
    })
  }
}
