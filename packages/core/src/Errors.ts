/**
 * The typed failures of the gateway: one flat, closed union so that `Effect.catchTags` and
 * `Match.tagsExhaustive` are checked at compile time. No error carries headers, keys or content.
 *
 * @since 0.1.0
 */
import { Duration, Schema } from "effect"
import { TenantId } from "./ModelCommand.js"
import { TargetRef } from "./ModelTarget.js"
import { AttemptRecord, type CallId, CallRecord } from "./ModelResult.js"
import { CompletedStep } from "./internal/completedStep.js"
import { ExcludedTarget } from "./RouteDecision.js"
import * as Literals from "./internal/literals.js"

const common = {
  callId: Schema.optional(Literals.CallId),
  attempts: Schema.optionalWith(Schema.Array(AttemptRecord), { default: () => [] }),
  /**
   * The targets the budget kept off the call's route (`BUDGET_DOES_NOT_FIT`: the tenant's budget
   * or `maxCost`), e.g. the fallback that could have served when the primary failed. Absent when
   * the budget excluded nothing. Since 0.3.0.
   */
  budgetExcluded: Schema.optional(Schema.Array(ExcludedTarget))
}

/** What a message adds when the budget kept targets off the route. */
const budgetNote = (e: { readonly budgetExcluded?: ReadonlyArray<ExcludedTarget> | undefined }): string =>
  e.budgetExcluded === undefined || e.budgetExcluded.length === 0
    ? ""
    : `; the budget excluded ${e.budgetExcluded.map((x) => x.target).join(", ")} (BUDGET_DOES_NOT_FIT)`

/**
 * The model declined, or a provider safety filter blocked the input or output. Never retried and
 * never a reason to try another model.
 *
 * @since 0.1.0
 * @category Errors
 */
export class Refusal extends Schema.TaggedError<Refusal>()("Refusal", {
  ...common,
  target: TargetRef,
  source: Schema.Literal("model", "safety_filter")
}) {
  override get message(): string {
    return `${this.target} refused (${this.source})${budgetNote(this)}`
  }
}

/**
 * A 429 with an optional hint of when to come back.
 *
 * @since 0.1.0
 * @category Errors
 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...common,
  target: TargetRef,
  retryAfter: Schema.optional(Schema.DurationFromMillis)
}) {
  override get message(): string {
    const hint = this.retryAfter ? `, retry after ${Duration.toMillis(this.retryAfter)} ms` : ""
    return `${this.target} rate limited${hint}${budgetNote(this)}`
  }
}

/**
 * A temporary failure: 5xx, overload, transport error or an attempt timeout.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>()("ProviderUnavailable", {
  ...common,
  target: TargetRef,
  /** `adapter_defect`: the adapter failed unexpectedly (a bug); the attempt is recorded and the call goes on. */
  reason: Schema.Literal(...Literals.temporaryKinds, "adapter_defect"),
  httpStatus: Schema.optional(Schema.Int),
  retryAfter: Schema.optional(Schema.DurationFromMillis)
}) {
  override get message(): string {
    return `${this.target} unavailable (${this.reason}${this.httpStatus ? ` ${this.httpStatus}` : ""})${budgetNote(this)}`
  }
}

/**
 * Output that is unparseable, fails the workflow schema, or was truncated. `issues` are JSON
 * paths and kinds of problem only, never the values.
 *
 * @since 0.1.0
 * @category Errors
 */
export class InvalidOutput extends Schema.TaggedError<InvalidOutput>()("InvalidOutput", {
  ...common,
  target: Schema.optional(TargetRef),
  issues: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `invalid output${this.target ? ` from ${this.target}` : ""}: ${this.issues.join("; ")}${budgetNote(this)}`
  }
}

/**
 * The request itself is wrong. Not retried and not masked by a fallback.
 *
 * @since 0.1.0
 * @category Errors
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  ...common,
  reason: Schema.Literal(
    "invalid_command",
    "unknown_workflow",
    "input_too_large",
    "context_length",
    "bad_request",
    "unsupported_content",
    /** The call's tenant is not the tenant of the agent run it was made in. */
    "run_tenant"
  ),
  target: Schema.optional(TargetRef),
  httpStatus: Schema.optional(Schema.Int),
  detail: Schema.String
}) {
  override get message(): string {
    return `invalid request (${this.reason}): ${this.detail}`
  }
}

/**
 * Permanent for that target: auth, permission, quota or spend cap, model not found. Falls back.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ProviderRejected extends Schema.TaggedError<ProviderRejected>()("ProviderRejected", {
  ...common,
  target: TargetRef,
  reason: Schema.Literal(...Literals.rejectedKinds, "other"),
  httpStatus: Schema.optional(Schema.Int)
}) {
  override get message(): string {
    return `${this.target} rejected the call (${this.reason})${budgetNote(this)}`
  }
}

/**
 * The policy forbids the call (residency, data class, capability). Lists the targets it excluded.
 *
 * @since 0.1.0
 * @category Errors
 */
export class PolicyViolation extends Schema.TaggedError<PolicyViolation>()("PolicyViolation", {
  ...common,
  reason: Literals.ExclusionReason,
  excluded: Schema.Array(ExcludedTarget)
}) {
  override get message(): string {
    return `policy violation (${this.reason}): ${this.excluded.map((e) => `${e.target}: ${e.reason}`).join(", ")}`
  }
}

/**
 * An attempt may have been processed and the command offers state-changing tools, so it was not
 * retried automatically.
 *
 * @since 0.1.0
 * @category Errors
 */
export class AmbiguousOutcome extends Schema.TaggedError<AmbiguousOutcome>()("AmbiguousOutcome", {
  ...common,
  target: TargetRef,
  cause: Schema.String
}) {
  override get message(): string {
    return `outcome on ${this.target} is unknown (${this.cause}); not retried because the command allows state-changing tools${budgetNote(this)}`
  }
}

/**
 * Why a budget refused a reservation: the tenant's `limit`, or an `undeclared_tenant` under
 * `undeclaredTenants: "reject"`.
 *
 * @since 0.2.0
 * @category Errors
 */
const BudgetRefusal = Schema.Literal("limit", "undeclared_tenant")
/** @since 0.2.0 */
export type BudgetRefusal = typeof BudgetRefusal.Type

/** The fix of an undeclared tenant's refusal. */
const undeclaredFix = (tenant: string) =>
  `declare ${tenant} under budgets.tenants, or set budgets.undeclaredTenants to "unlimited" or a default budget`

/** An amount of money in a message: at most 6 significant digits. */
const amount = (x: number): string => `${Number(x.toPrecision(6))}`

/**
 * The tenant's budget cannot cover the worst case of this call (or of the next attempt).
 * `reason` says which: `limit` (the tenant's limit, less what is committed and reserved, is below
 * `requested`) or `undeclared_tenant` (the tenant is not declared and `undeclaredTenants` is
 * `"reject"`; `limit` is then 0). `fix` says what to change (lower the output cap, raise the
 * limit, declare the tenant); it names the tenant, amounts and targets, never content.
 *
 * @since 0.1.0
 * @category Errors
 */
export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  ...common,
  tenant: TenantId,
  limit: Schema.Number,
  committed: Schema.Number,
  reserved: Schema.Number,
  requested: Schema.Number,
  /** Why the reservation was refused (since 0.3.0; absent in older records: `limit`). */
  reason: Schema.optionalWith(BudgetRefusal, { default: () => "limit" as const }),
  /** How to make the call fit (since 0.3.0). */
  fix: Schema.optional(Schema.String)
}) {
  override get message(): string {
    if (this.reason === "undeclared_tenant") {
      return `tenant ${this.tenant} is not declared and undeclared tenants are rejected (fix: ${this.fix ?? undeclaredFix(this.tenant)})`
    }
    const left = Math.max(0, this.limit - this.committed - this.reserved)
    return `budget of ${this.tenant} exceeded: limit ${this.limit}, committed ${this.committed}, reserved ${this.reserved}, requested ${this.requested} (fix: ${this.fix ?? `request at most the ${amount(left)} left, or raise the tenant's limit`})`
  }
}

/**
 * No time left: queued too long for a permit, or too little left for another attempt.
 *
 * @since 0.1.0
 * @category Errors
 */
export class DeadlineExceeded extends Schema.TaggedError<DeadlineExceeded>()("DeadlineExceeded", {
  ...common,
  stage: Schema.Literal("queue", "before_attempt", "attempt", "call"),
  timeoutMs: Schema.Number,
  elapsedMs: Schema.Number,
  /**
   * Stage `queue`: the concurrency limit that kept the call from a permit — its workflow's cap
   * (`workflow_max`), its tenant's maximum (`tenant_max`), the tenant's permits kept for its other
   * workflows (`workflow_reservations`) or the shared pool (`shared_pool`). Since 0.3.0.
   */
  permitLimit: Schema.optional(Schema.Literal("workflow_max", "tenant_max", "workflow_reservations", "shared_pool"))
}) {
  override get message(): string {
    const limit = this.permitLimit === undefined ? "" : `, ${this.permitLimit}`
    return `deadline of ${this.timeoutMs} ms exceeded at ${this.elapsedMs} ms (${this.stage}${limit})${budgetNote(this)}`
  }
}

/**
 * No target satisfies the request; lists every excluded target and why.
 *
 * @since 0.1.0
 * @category Errors
 */
export class NoEligibleRoute extends Schema.TaggedError<NoEligibleRoute>()("NoEligibleRoute", {
  ...common,
  workflow: Schema.String,
  excluded: Schema.Array(ExcludedTarget)
}) {
  override get message(): string {
    return `no eligible route for ${this.workflow}: ${this.excluded.map((e) => `${e.target}: ${e.reason}`).join(", ")}`
  }
}

/**
 * A shared-state store (budgets, permits, breakers, tool ledger) could not answer. The gateway
 * fails closed on it: a call whose budget, permit or breaker cannot be checked does not reach a
 * provider, and nothing waits on a store past the call's deadline. `detail` never carries keys,
 * URLs or content.
 *
 * @since 0.2.0
 * @category Errors
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  ...common,
  /** `ratelimit` since 0.5.0 (provider rate limits, `RateLimits`). */
  store: Schema.Literal("budget", "permit", "breaker", "ledger", "ratelimit", "cache"),
  operation: Schema.String,
  detail: Schema.optionalWith(Schema.String, { default: () => "" })
}) {
  override get message(): string {
    return `${this.store} store failed during ${this.operation}${this.detail ? `: ${this.detail}` : ""}`
  }
}

/**
 * The agent run the call belongs to has no time (`deadline`) or money (`budget`) left: the call did
 * not start (no provider was called, nothing was reserved). `steps` are the run's completed steps,
 * so the caller can return a partial result or hand off.
 *
 * @since 0.2.0
 * @category Errors
 */
export class RunExhausted extends Schema.TaggedError<RunExhausted>()("RunExhausted", {
  ...common,
  runId: Schema.String,
  reason: Schema.Literal("deadline", "budget"),
  steps: Schema.Array(CompletedStep),
  /** The CallRecords of those steps, in the order they settled (evidence only, never content). */
  records: Schema.optionalWith(Schema.Array(CallRecord), { default: () => [] })
}) {
  override get message(): string {
    return `agent run ${this.runId} exhausted (${this.reason}) after ${this.steps.length} step(s)`
  }
}

/**
 * Every error `ModelGateway.generate` can fail with.
 *
 * @since 0.1.0
 * @category Errors
 */
export type GatewayError =
  | Refusal
  | RateLimited
  | ProviderUnavailable
  | InvalidOutput
  | InvalidRequest
  | ProviderRejected
  | PolicyViolation
  | AmbiguousOutcome
  | BudgetExceeded
  | DeadlineExceeded
  | NoEligibleRoute
  | StoreError
  | RunExhausted

/**
 * Schema of {@link GatewayError}, for encoding errors into records.
 *
 * @since 0.1.0
 * @category Errors
 */
export const GatewayError = Schema.Union(
  Refusal,
  RateLimited,
  ProviderUnavailable,
  InvalidOutput,
  InvalidRequest,
  ProviderRejected,
  PolicyViolation,
  AmbiguousOutcome,
  BudgetExceeded,
  DeadlineExceeded,
  NoEligibleRoute,
  StoreError,
  RunExhausted
)

/**
 * One problem found in the gateway configuration.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ConfigProblem extends Schema.Class<ConfigProblem>("@modelgate/core/ConfigProblem")({
  path: Schema.String,
  workflow: Schema.optional(Schema.String),
  target: Schema.optional(Schema.String),
  reason: Schema.String,
  detail: Schema.String,
  /** What to change to fix it (startup problems of `GatewayConfig`). */
  fix: Schema.optional(Schema.String)
}) {
  override toString(): string {
    const who = [this.workflow && `workflow ${this.workflow}`, this.target && `target ${this.target}`]
      .filter(Boolean)
      .join(", ")
    return `${this.path}: ${this.reason}${who ? ` (${who})` : ""}: ${this.detail}${this.fix ? ` (fix: ${this.fix})` : ""}`
  }
}

/**
 * The configuration is invalid. Lists every problem, not only the first.
 *
 * @since 0.1.0
 * @category Errors
 */
export class GatewayConfigError extends Schema.TaggedError<GatewayConfigError>()("GatewayConfigError", {
  problems: Schema.Array(ConfigProblem)
}) {
  override get message(): string {
    return `invalid gateway configuration, ${this.problems.length} problem(s):\n${this.problems.map((p) => `  - ${p.toString()}`).join("\n")}`
  }
}

/** A gateway error class's constructor fields, without those of the call it ended, under its tag. */
type FailureOf<C> = C extends abstract new (
  props: infer P,
  ...rest: infer _
) => { readonly _tag: infer T }
  ? { readonly _tag: T } & Omit<P, "callId" | "attempts" | "budgetExcluded">
  : never

/**
 * A gateway failure as plain data, before it becomes an error: what the pipeline, the router and
 * the disposition table pass around. `fromFailure` (internal) turns it into the typed error once, with
 * the call id and the attempts, when the call ends with it.
 *
 * @since 0.2.0
 * @category Errors
 */
export type Failure = FailureOf<(typeof GatewayError.members)[number]>

/**
 * What an error knows about the call it ended.
 *
 * @internal
 */
export interface CallContext {
  readonly callId?: CallId | undefined
  readonly attempts?: ReadonlyArray<AttemptRecord> | undefined
  /** The route's `BUDGET_DOES_NOT_FIT` exclusions (set on the error only when there are some). */
  readonly budgetExcluded?: ReadonlyArray<ExcludedTarget> | undefined
}

/**
 * The one place gateway errors are made: a {@link Failure} plus the call it ended. Fields were
 * checked where the failure was described, so the constructor does not validate them again.
 * Engine-internal: the pipeline and the router end calls with it.
 *
 * @internal
 */
export const fromFailure = (failure: Failure, call: CallContext): GatewayError => {
  const excluded = call.budgetExcluded
  const props =
    excluded === undefined || excluded.length === 0
      ? { callId: call.callId, attempts: call.attempts ?? [] }
      : { callId: call.callId, attempts: call.attempts ?? [], budgetExcluded: excluded }
  const unchecked = { disableValidation: true }
  switch (failure._tag) {
    case "Refusal":
      return new Refusal({ ...failure, ...props }, unchecked)
    case "RateLimited":
      return new RateLimited({ ...failure, ...props }, unchecked)
    case "ProviderUnavailable":
      return new ProviderUnavailable({ ...failure, ...props }, unchecked)
    case "InvalidOutput":
      return new InvalidOutput({ ...failure, ...props }, unchecked)
    case "InvalidRequest":
      return new InvalidRequest({ ...failure, ...props }, unchecked)
    case "ProviderRejected":
      return new ProviderRejected({ ...failure, ...props }, unchecked)
    case "PolicyViolation":
      return new PolicyViolation({ ...failure, ...props }, unchecked)
    case "AmbiguousOutcome":
      return new AmbiguousOutcome({ ...failure, ...props }, unchecked)
    case "BudgetExceeded":
      return new BudgetExceeded({ ...failure, ...props }, unchecked)
    case "DeadlineExceeded":
      return new DeadlineExceeded({ ...failure, ...props }, unchecked)
    case "NoEligibleRoute":
      return new NoEligibleRoute({ ...failure, ...props }, unchecked)
    case "StoreError":
      return new StoreError({ ...failure, ...props }, unchecked)
    case "RunExhausted":
      return new RunExhausted({ ...failure, ...props }, unchecked)
  }
}
