/**
 * `modelgate explain <config.json> <request.json>`: the route decision the gateway would make for
 * one request, without calling any provider: the eligible targets in fallback order (the first is
 * selected) and why it leads, every excluded target with its reason, the scores under scored
 * selection, and the requirements applied. The request is a `ModelCommand` in JSON (what
 * `ModelCommand.decodeUnknown` reads). The router runs as in a freshly started process: every
 * breaker closed, no health observed, no budget consulted (a budget can still refuse the call, or
 * drop a fallback that no longer fits, when it runs).
 *
 * @since 0.2.0
 */
import { ModelCommand, RouteDecision } from "@modelgate/core"
import type { ConfigProblem, GatewayError } from "@modelgate/core/Errors"
import { Effect, Either, ParseResult, Schema } from "effect"
import * as ConfigFile from "./ConfigFile.js"
import { withGateway } from "./internal/offline.js"

/**
 * What explaining gave: the decision, the request refused before or by routing (with the targets
 * excluded and why), or the problems that stop the configuration or the request from decoding.
 *
 * @since 0.2.0
 * @category Models
 */
export type Result =
  | { readonly _tag: "Decided"; readonly decision: RouteDecision.RouteDecision }
  | { readonly _tag: "Refused"; readonly error: GatewayError }
  | { readonly _tag: "Invalid"; readonly problems: ReadonlyArray<string> }

const problemLines = (problems: ReadonlyArray<ConfigProblem>): ReadonlyArray<string> =>
  problems.map((p) => p.toString())

/**
 * Explains the request `requestText` under the configuration `configText` (the paths name them),
 * as `generate` (default) or `stream` would route it.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const explain = (
  paths: { readonly config: string; readonly request: string },
  configText: string,
  requestText: string,
  mode: "generate" | "stream" = "generate"
): Effect.Effect<Result> =>
  Effect.gen(function* () {
    const json = ConfigFile.readJson(paths.config, configText)
    if (Either.isLeft(json)) return { _tag: "Invalid", problems: problemLines(json.left) } as const
    const loaded = yield* Effect.either(ConfigFile.decode(json.right))
    if (Either.isLeft(loaded)) return { _tag: "Invalid", problems: problemLines(loaded.left) } as const
    const request = ConfigFile.readJson(paths.request, requestText)
    if (Either.isLeft(request)) return { _tag: "Invalid", problems: problemLines(request.left) } as const
    const command = yield* Effect.either(ModelCommand.decodeUnknown(request.right))
    if (Either.isLeft(command)) {
      const issues = ParseResult.ArrayFormatter.formatErrorSync(command.left)
      return {
        _tag: "Invalid",
        problems: issues.map((i) => `${paths.request}: ${i.path.join(".") || "$"}: ${i.message}`)
      } as const
    }
    const decided = yield* Effect.either(
      withGateway(loaded.right, (gateway) => gateway.router.resolve(command.right, mode))
    )
    if (Either.isRight(decided)) return { _tag: "Decided", decision: decided.right.decision } as const
    const error = decided.left
    return error._tag === "GatewayConfigError"
      ? ({ _tag: "Invalid", problems: problemLines(error.problems) } as const)
      : ({ _tag: "Refused", error } as const)
  })

const pad = (text: string, width: number) => (text.length >= width ? text : text + " ".repeat(width - text.length))

const excludedLines = (excluded: ReadonlyArray<RouteDecision.ExcludedTarget>): ReadonlyArray<string> =>
  excluded.length === 0
    ? ["excluded   none"]
    : ["excluded", ...excluded.map((e) => `  ${pad(e.target, 44)} ${pad(e.reason, 28)} ${e.detail}`)]

/**
 * The decision as lines of text.
 *
 * @since 0.2.0
 * @category Rendering
 */
export const renderDecision = (d: RouteDecision.RouteDecision): ReadonlyArray<string> => {
  const lines: Array<string> = [
    `workflow   ${d.workflow} (policy ${d.policyVersion})${d.routeId === undefined ? "" : `, decision ${d.routeId}`}`,
    `selected   ${d.selected ?? "none"}${d.selectionReason === undefined ? "" : ` (${d.selectionReason})`}`,
    d.eligible.length === 0 ? "eligible   none" : `eligible   ${d.eligible.map((t, i) => `${i + 1}. ${t}`).join("  ")}`,
    `fallback   ${d.eligible.length > 1 ? d.eligible.slice(1).join(" → ") : "none"}`,
    ...excludedLines(d.excluded)
  ]
  if (d.scores !== undefined && d.scores.length > 0) {
    lines.push(
      "scores     target                                        total  quality latency cost   health affinity penalty"
    )
    for (const s of d.scores) {
      const n = (x: number) => pad(x.toFixed(4), 7)
      lines.push(
        `  ${pad(s.target, 44)} ${n(s.total)} ${n(s.quality)} ${n(s.latency)} ${n(s.cost)} ${n(s.health)} ${n(s.affinity)}  ${n(s.penalty)}`
      )
    }
  }
  const r = d.required
  if (r !== undefined) {
    const needs = (["tools", "vision", "streaming", "structuredOutput"] as const).filter((k) => r[k])
    lines.push(
      `required   regions [${r.regions.join(", ")}], data class ${r.dataClass}, risk ${r.risk}` +
        (needs.length > 0 ? `, needs ${needs.join(", ")}` : "") +
        (r.contextTokens === undefined ? "" : `, ~${r.contextTokens} input tokens`) +
        (r.minQualityTier === undefined ? "" : `, quality ≥ ${r.minQualityTier}`)
    )
  }
  if (d.canary !== undefined)
    lines.push(`canary     ${d.canary.id}: ${d.canary.side}${d.canary.skipped ? " (skipped)" : ""}`)
  lines.push("(no provider called; breakers closed and budgets not consulted, as in a fresh process)")
  return lines
}

/**
 * The result as lines of text (or, with `json`, one JSON document: the encoded decision, or the
 * refusal or problems).
 *
 * @since 0.2.0
 * @category Rendering
 */
export const render = (result: Result, json: boolean): ReadonlyArray<string> => {
  switch (result._tag) {
    case "Decided":
      return json
        ? [JSON.stringify(Schema.encodeSync(RouteDecision.RouteDecision)(result.decision), null, 2)]
        : renderDecision(result.decision)
    case "Refused": {
      const error = result.error
      const excluded = "excluded" in error ? error.excluded : []
      if (json) return [JSON.stringify({ refused: error._tag, message: error.message, excluded }, null, 2)]
      return [`refused    ${error._tag}: ${error.message}`, ...excludedLines(excluded)]
    }
    case "Invalid":
      return json ? [JSON.stringify({ problems: result.problems }, null, 2)] : result.problems
  }
}
