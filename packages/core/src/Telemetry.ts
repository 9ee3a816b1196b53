/**
 * Telemetry of the gateway: span names and attributes, and the `Metric`s it updates. Everything is
 * derived from the evidence of a call (the same data as its `CallRecord`), so telemetry holds what
 * an operator needs — versions, route, attempts, timing, usage, cost, outcome — and never what a
 * user typed or a model generated: no prompt, message, tool argument or output text, by default and
 * with no opt-in.
 *
 * Spans go through Effect's tracer (export them with `@modelgate/adapters/opentelemetry`):
 *
 * - `modelgate.generate` / `modelgate.stream` / `modelgate.embed`: one per logical call.
 * - `modelgate.attempt`: one per provider attempt, a child of the call span (the adapter's HTTP
 *   spans nest under it). A failed attempt's span ends with status ERROR (its exception's type is
 *   the attempt's error tag), also when the call then succeeds on a retry or a fallback.
 *
 * An attribute is set only when it has a value (e.g. `modelgate.cost.estimated_usd` is absent when
 * nothing was estimated); lists (`modelgate.route.eligible`, `modelgate.route.excluded`,
 * `modelgate.route.escalations`, `gen_ai.response.finish_reasons`) are array attributes.
 *
 * Attributes follow the OpenTelemetry GenAI semantic conventions where they fit
 * (`gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`, …) and use the
 * `modelgate.` prefix otherwise. Tenant ids are recorded on spans only when {@link TelemetrySettings}
 * says so, optionally hashed. As a metric label (the tenant spend counters) a tenant id appears only
 * when the configuration names it (a target's or workflow's `tenants`, or
 * `Settings.metricTenants`); every other tenant is counted as `other`.
 *
 * Metric labels only take values from the configuration (workflow names, target refs, declared
 * tenants and task segments, policy versions, tool names) or closed sets (outcomes, error tags,
 * failure kinds), so label cardinality is bounded whatever callers send: a caller's own segment or
 * an unknown tool name is counted as `other` / `unknown`.
 *
 * **Metric names** follow one scheme, OpenTelemetry style: `modelgate.<area>.<name>[_<unit>]`, dot
 * separated, lowercase snake_case inside a segment. The area is what is measured (`call`,
 * `attempt`, `permit`, `budget`, `breaker`, `retry_budget`); the gateway's own counters of calls and
 * what they use stand at the top (`modelgate.calls`, `modelgate.tokens`). Counters are named by what
 * they count, with no `_total` (a Prometheus exporter appends it, and turns dots into underscores:
 * `modelgate.breaker.transitions` is scraped as `modelgate_breaker_transitions_total`). A unit is a
 * suffix of the last segment: `_ms`, `_usd`. Every metric of the library:
 *
 * | Name | Kind | Labels | Metric object |
 * | --- | --- | --- | --- |
 * | `modelgate.calls` | counter | workflow, route, outcome, error.type, mode | {@link metrics}`.calls` |
 * | `modelgate.call.duration_ms` | histogram | workflow, route, outcome, mode | {@link metrics}`.callLatency` |
 * | `modelgate.attempts` | counter | workflow, target, attempt outcome | {@link metrics}`.attempts` |
 * | `modelgate.attempt.duration_ms` | histogram | target, attempt outcome | {@link metrics}`.attemptLatency` |
 * | `modelgate.attempt.ttft_ms` | histogram | workflow, target | {@link metrics}`.ttft` |
 * | `modelgate.tokens` | counter | workflow, target, gen_ai.token.type | {@link metrics}`.tokens` |
 * | `modelgate.cost_usd` | counter | workflow, target | {@link metrics}`.cost` |
 * | `modelgate.retries` | counter | workflow | {@link metrics}`.retries` |
 * | `modelgate.fallbacks` | counter | workflow | {@link metrics}`.fallbacks` |
 * | `modelgate.degraded` | counter | workflow | {@link metrics}`.degraded` |
 * | `modelgate.budget.rejections` | counter | workflow | {@link metrics}`.budgetRejections` |
 * | `modelgate.permit.wait_ms` | histogram | workflow | {@link metrics}`.permitWait` |
 * | `modelgate.canary.assignments` | counter | workflow, canary, side | {@link metrics}`.canaryAssignments` |
 * | `modelgate.spend.estimated_units` | counter | tenant, policy version | {@link metrics}`.tenantSpendEstimated` |
 * | `modelgate.spend.actual_units` | counter | tenant, policy version | {@link metrics}`.tenantSpendActual` |
 * | `modelgate.fallback.routes` | counter | workflow, from, to | {@link metrics}`.fallbackRoutes` |
 * | `modelgate.segment.outcomes` | counter | workflow, segment, outcome, policy version | {@link metrics}`.segmentOutcomes` |
 * | `modelgate.tool.failures` | counter | tool, kind | {@link metrics}`.toolFailures` |
 * | `modelgate.budget.settle_failures` | counter | operation | `internal/budgetReservation` `metrics.settleFailures` |
 * | `modelgate.budget.overspend_usd` | counter | — | `internal/budgetReservation` `metrics.overspend` |
 * | `modelgate.breaker.state` | gauge (0 closed, 1 half-open, 2 open) | route | `internal/healthRecord` `metrics.breakerState` |
 * | `modelgate.breaker.transitions` | counter | route, from, to | `internal/healthRecord` `metrics.breakerTransitions` |
 * | `modelgate.breaker.store_failures` | counter | operation | `internal/healthRecord` `metrics.breakerStoreFailures` |
 * | `modelgate.retry_budget.rejections` | counter | — | `internal/healthRecord` `metrics.retryBudgetRejections` |
 *
 * Renamed in 0.2.0: `modelgate.ttft_ms` → `modelgate.attempt.ttft_ms`, `modelgate_breaker_state` →
 * `modelgate.breaker.state`, `modelgate_breaker_transitions_total` → `modelgate.breaker.transitions`,
 * `modelgate_retry_budget_rejections_total` → `modelgate.retry_budget.rejections`.
 *
 * @since 0.1.0
 */
import { Context, Layer, Metric, MetricBoundaries } from "effect"

// ---------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------

/**
 * How the tenant id of a call is put on its span.
 *
 * - `Omit` (default): not recorded.
 * - `Plain`: recorded as is (`modelgate.tenant`).
 * - `Hashed`: recorded as `hash(tenant)` (`modelgate.tenant.hash`). Use a keyed hash (HMAC) so that
 *   guessable tenant ids cannot be recovered; `@modelgate/adapters/opentelemetry` has one.
 *
 * @since 0.1.0
 * @category Models
 */
export type TenantAttribute =
  | { readonly _tag: "Omit" }
  | { readonly _tag: "Plain" }
  | { readonly _tag: "Hashed"; readonly hash: (tenant: string) => string }

/**
 * @since 0.1.0
 * @category Models
 */
export interface Settings {
  readonly tenant: TenantAttribute
  /**
   * Tenants whose id may be a metric label (the tenant spend counters), besides those the
   * configuration binds to targets or workflows: e.g. the tenants declared in `Budgets`. Every
   * other tenant is counted as `other`. Since 0.3.0.
   */
  readonly metricTenants?: ReadonlyArray<string> | undefined
}

/**
 * Telemetry settings, read once when the gateway is built: provide it to `ModelGateway.layer`
 * (e.g. `Layer.provide(Telemetry.layerSettings({ tenant: ... }))`). Default: tenant ids omitted.
 *
 * @since 0.1.0
 * @category Context
 */
export class TelemetrySettings extends Context.Reference<TelemetrySettings>()("@modelgate/core/Telemetry/Settings", {
  defaultValue: (): Settings => ({ tenant: { _tag: "Omit" } })
}) {}

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerSettings = (settings: Settings): Layer.Layer<never> =>
  Layer.succeedContext(Context.make(TelemetrySettings, settings))

/**
 * Tenant ids recorded in plain text.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const tenantPlain: TenantAttribute = { _tag: "Plain" }

/**
 * Tenant ids recorded through `hash` (results memoized per tenant, at most 10 000 entries).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const tenantHashed = (hash: (tenant: string) => string): TenantAttribute => {
  const memo = new Map<string, string>()
  return {
    _tag: "Hashed",
    hash: (tenant) => {
      let h = memo.get(tenant)
      if (h === undefined) {
        if (memo.size >= 10_000) memo.clear()
        h = hash(tenant)
        memo.set(tenant, h)
      }
      return h
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/**
 * Span names.
 *
 * @internal
 */
export const SpanName = {
  generate: "modelgate.generate",
  stream: "modelgate.stream",
  /** An embedding call (`ModelGateway.embed`). @since 0.2.0 */
  embed: "modelgate.embed",
  attempt: "modelgate.attempt"
} as const

/**
 * Attribute keys used on spans and as metric labels.
 *
 * @since 0.1.0
 * @category Constants
 */
export const Attr = {
  // OpenTelemetry GenAI semantic conventions
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  system: "gen_ai.system",
  requestModel: "gen_ai.request.model",
  requestMaxTokens: "gen_ai.request.max_tokens",
  responseModel: "gen_ai.response.model",
  responseFinishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  tokenType: "gen_ai.token.type",
  errorType: "error.type",
  httpStatus: "http.response.status_code",
  // modelgate
  callId: "modelgate.call_id",
  segment: "modelgate.segment",
  fallbackFrom: "modelgate.fallback.from",
  fallbackTo: "modelgate.fallback.to",
  tool: "modelgate.tool",
  toolFailureKind: "modelgate.tool.failure_kind",
  /** The caller's request id (`ModelCommand.requestId`): a span attribute, never a metric label. */
  requestId: "modelgate.request_id",
  mode: "modelgate.mode",
  workflow: "modelgate.workflow",
  tenant: "modelgate.tenant",
  tenantHash: "modelgate.tenant.hash",
  policyVersion: "modelgate.policy_version",
  promptId: "modelgate.prompt.id",
  promptVersion: "modelgate.prompt.version",
  schemaVersion: "modelgate.schema.version",
  pricingVersion: "modelgate.pricing.version",
  target: "modelgate.target",
  route: "modelgate.route",
  eligible: "modelgate.route.eligible",
  excluded: "modelgate.route.excluded",
  modelVersion: "modelgate.response.model_version",
  fallbackUsed: "modelgate.fallback_used",
  degraded: "modelgate.degraded",
  outcome: "modelgate.outcome",
  errorReason: "modelgate.error.reason",
  retryCount: "modelgate.retry_count",
  retryBudgetExhausted: "modelgate.retry_budget_exhausted",
  attemptCount: "modelgate.attempt_count",
  latencyMs: "modelgate.latency_ms",
  ttftMs: "modelgate.ttft_ms",
  permitWaitMs: "modelgate.permit_wait_ms",
  cachedInputTokens: "modelgate.usage.cached_input_tokens",
  reasoningTokens: "modelgate.usage.reasoning_tokens",
  costUsd: "modelgate.cost.usd",
  costEstimatedUsd: "modelgate.cost.estimated_usd",
  costReservedUsd: "modelgate.cost.reserved_usd",
  schemaValid: "modelgate.schema_valid",
  attemptNumber: "modelgate.attempt.number",
  attemptOutcome: "modelgate.attempt.outcome",
  attemptStartOffsetMs: "modelgate.attempt.start_offset_ms",
  attemptTimeoutMs: "modelgate.attempt.timeout_ms",
  providerRequestId: "modelgate.attempt.provider_request_id",
  retryAfterMs: "modelgate.attempt.retry_after_ms",
  possiblyProcessed: "modelgate.attempt.possibly_processed"
} as const

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

/** An incremental counter (the gateway's counters only ever add). */
const counter = (name: string, description: string) => Metric.counter(name, { description, incremental: true })

const msBoundaries = MetricBoundaries.exponential({ start: 5, factor: 2, count: 16 })

/**
 * The gateway's metrics (Effect `Metric`s, exported like any other through OpenTelemetry). Names and
 * the naming scheme: see the module documentation.
 *
 * Labels: `modelgate.workflow` (configured workflow, else `unknown`), `modelgate.route` (target that
 * answered, else `none`), `modelgate.target` (target of an attempt), `modelgate.outcome`,
 * `modelgate.attempt.outcome`, `modelgate.mode`, `error.type` (error tag, `none` on success),
 * `gen_ai.token.type` (`input`, `cached_input`, `output`, `reasoning`).
 *
 * @since 0.1.0
 * @category Metrics
 */
export const metrics = {
  /** Logical calls, by workflow, route, outcome, error type and mode. */
  calls: counter("modelgate.calls", "Logical model calls"),
  /** End-to-end latency of calls in milliseconds, by workflow, route, outcome and mode. */
  callLatency: Metric.histogram("modelgate.call.duration_ms", msBoundaries, "End-to-end call latency (ms)"),
  /** Provider attempts, by workflow, target and attempt outcome. */
  attempts: counter("modelgate.attempts", "Provider attempts"),
  /** Latency of provider attempts in milliseconds, by target and attempt outcome. */
  attemptLatency: Metric.histogram("modelgate.attempt.duration_ms", msBoundaries, "Provider attempt latency (ms)"),
  /** Time to first token of streamed attempts in milliseconds, by workflow and target. */
  ttft: Metric.histogram("modelgate.attempt.ttft_ms", msBoundaries, "Time to first token of streamed attempts (ms)"),
  /** Tokens, by workflow, target and token type. */
  tokens: counter("modelgate.tokens", "Tokens used"),
  /** Actual cost in USD, by workflow and target. */
  cost: counter("modelgate.cost_usd", "Actual cost (USD)"),
  /** Retries (same target, after a backoff), by workflow. */
  retries: counter("modelgate.retries", "Retries on the same target"),
  /** Calls whose answer came from a fallback route, or that tried one, by workflow. */
  fallbacks: counter("modelgate.fallbacks", "Calls that used a fallback route"),
  /** Calls answered in degraded mode, by workflow. */
  degraded: counter("modelgate.degraded", "Calls answered in degraded mode"),
  /** Calls refused because the tenant's budget could not cover them, by workflow. */
  budgetRejections: counter("modelgate.budget.rejections", "Calls refused by the tenant budget"),
  /** Time spent waiting for a concurrency permit in milliseconds, by workflow. */
  permitWait: Metric.histogram(
    "modelgate.permit.wait_ms",
    MetricBoundaries.exponential({ start: 1, factor: 2, count: 16 }),
    "Time waiting for a concurrency permit (ms)"
  ),
  /** Canary assignments, by workflow, canary id and side (`candidate` / `baseline`). */
  canaryAssignments: counter("modelgate.canary.assignments", "Calls assigned a side of a workflow's canary"),
  /**
   * Estimated cost of calls (the worst case of the first routed target) in store units (billionths
   * of the currency, `Budgets.unitsPerCurrency`), by tenant (declared, else `other`) and policy
   * version. Since 0.3.0.
   */
  tenantSpendEstimated: counter(
    "modelgate.spend.estimated_units",
    "Estimated spend of calls (billionths of the currency)"
  ),
  /** Actual cost of calls in store units, by tenant (declared, else `other`) and policy version. Since 0.3.0. */
  tenantSpendActual: counter("modelgate.spend.actual_units", "Actual spend of calls (billionths of the currency)"),
  /** Moves from one target to another between consecutive attempts of a call, by workflow, from and to. Since 0.3.0. */
  fallbackRoutes: counter("modelgate.fallback.routes", "Fallbacks by route (from target, to target)"),
  /**
   * Calls by workflow, task segment (one the configuration names, else `other`; `none` without
   * one), outcome and policy version: the pass rate per segment. Since 0.3.0.
   */
  segmentOutcomes: counter("modelgate.segment.outcomes", "Call outcomes by task segment"),
  /**
   * Tool calls of a `ToolLoop` that failed, by tool (`unknown` for a name the model made up) and
   * kind (`unknown_tool`, `invalid_arguments`, `failed`: the handler failed, `ledger`: the tool
   * ledger refused the call or could not answer). Since 0.3.0.
   */
  toolFailures: counter("modelgate.tool.failures", "Tool calls that failed")
} as const
