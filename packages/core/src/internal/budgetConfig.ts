/**
 * The budget configuration's schema (decodable from JSON) and its cross-field checks: what
 * `Budgets.decode`, `Budgets.make` and `Budgets.layerConfig` apply.
 */
import { Duration, Schema } from "effect"
import { unitsPerCurrency } from "../BudgetStore.js"
import { ConfigProblem } from "../Errors.js"
import { TenantId } from "../ModelCommand.js"
import * as Windows from "./budgetWindow.js"
import { isReservedKey, reservedKeyDetail, reservedKeysOf, safeRecord, segment } from "./issues.js"
import { type Options, Period, TenantBudget } from "./budgetTypes.js"

/**
 * Budget configuration (decodable from JSON: `reservationTtl` in milliseconds).
 *
 * Undeclared tenants (`undeclaredTenants`), the policy chosen here:
 * - `"reject"` (default): a tenant not listed in `tenants` has no budget; its calls fail with
 *   `BudgetExceeded` (`reason: "undeclared_tenant"`, limit 0) before any traffic. Tenants must be declared.
 * - `"unlimited"`: undeclared tenants are not limited (spend is not tracked).
 * - a {@link TenantBudget}: each undeclared tenant gets its own account with that limit.
 */
export const BudgetsConfig = Schema.Struct({
  /** By tenant id; `__proto__`, `constructor` and `prototype` are refused as keys, never dropped. */
  tenants: Schema.optional(safeRecord(TenantBudget)),
  undeclaredTenants: Schema.optional(Schema.Union(Schema.Literal("reject", "unlimited"), TenantBudget)),
  /**
   * How long an unsettled reservation holds its amount (a crashed holder); default 15 minutes, at
   * most 7 days, and longer than every workflow timeout.
   */
  reservationTtl: Schema.optional(
    Schema.transform(
      Schema.Number.pipe(
        Schema.finite(),
        Schema.between(0, 604_800_000, { description: "milliseconds between 0 and 604800000 (7 days)" })
      ),
      Schema.DurationFromSelf,
      { strict: true, decode: (ms) => Duration.millis(ms), encode: (d) => Duration.toMillis(d) }
    )
  )
})

const maxLimit = Math.floor(Number.MAX_SAFE_INTEGER / unitsPerCurrency)
const periods: ReadonlyArray<string> = Period.literals
const isTenantId = Schema.is(TenantId)

/**
 * Every problem of a budget configuration (empty when valid): non-positive or non-finite limits,
 * limits above what the store can count exactly, unknown periods, malformed tenant ids, reserved
 * keys (`__proto__`, `constructor`, `prototype`), a reservation TTL that is not finite, positive
 * and at most 7 days, and a configuration that would reject every call. Problems name paths, never
 * values.
 */
export const validate = (options: Options): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const checkBudget = (path: string, budget: TenantBudget) => {
    if (typeof budget !== "object" || budget === null) {
      problems.push(new ConfigProblem({ path, reason: "INVALID_VALUE", detail: "must be an object with a limit" }))
      return
    }
    if (typeof budget.limit !== "number" || !Number.isFinite(budget.limit) || budget.limit <= 0) {
      problems.push(
        new ConfigProblem({
          path: `${path}.limit`,
          reason: "NON_POSITIVE_LIMIT",
          detail: "must be a finite number > 0"
        })
      )
    } else if (budget.limit > maxLimit) {
      problems.push(
        new ConfigProblem({ path: `${path}.limit`, reason: "LIMIT_TOO_LARGE", detail: `at most ${maxLimit}` })
      )
    }
    if (budget.period !== undefined && !periods.includes(budget.period)) {
      problems.push(
        new ConfigProblem({
          path: `${path}.period`,
          reason: "UNKNOWN_PERIOD",
          detail: `must be one of ${periods.join(", ")}`
        })
      )
    }
  }
  for (const key of reservedKeysOf(options.tenants)) {
    problems.push(
      new ConfigProblem({ path: `budgets.tenants.${key}`, reason: "RESERVED_KEY", detail: reservedKeyDetail })
    )
  }
  const tenants = Object.entries(options.tenants ?? {}).filter(([tenant]) => !isReservedKey(tenant))
  for (const [tenant, budget] of tenants) {
    const path = `budgets.tenants.${segment(tenant)}`
    if (!isTenantId(tenant))
      problems.push(new ConfigProblem({ path, reason: "INVALID_TENANT", detail: "not a valid tenant id" }))
    checkBudget(path, budget)
  }
  const undeclared = options.undeclaredTenants ?? "reject"
  if (typeof undeclared === "object") checkBudget("budgets.undeclaredTenants", undeclared)
  else if (undeclared !== "reject" && undeclared !== "unlimited") {
    problems.push(
      new ConfigProblem({
        path: "budgets.undeclaredTenants",
        reason: "UNKNOWN_POLICY",
        detail: 'must be "reject", "unlimited" or a budget'
      })
    )
  }
  if (tenants.length === 0 && undeclared === "reject") {
    problems.push(
      new ConfigProblem({
        path: "budgets.tenants",
        reason: "NO_TENANTS",
        detail: "no tenant is declared and undeclared tenants are rejected: every call would fail"
      })
    )
  }
  if (options.reservationTtl !== undefined) {
    const ttl = Duration.decodeUnknown(options.reservationTtl)
    if (ttl._tag === "None" || !Duration.isFinite(ttl.value) || Duration.toMillis(ttl.value) <= 0) {
      problems.push(
        new ConfigProblem({
          path: "budgets.reservationTtl",
          reason: "NON_POSITIVE_TIMEOUT",
          detail: "must be a finite duration > 0"
        })
      )
    } else if (Duration.greaterThan(ttl.value, Windows.maxReservationTtl)) {
      problems.push(
        new ConfigProblem({
          path: "budgets.reservationTtl",
          reason: "DURATION_TOO_LONG",
          detail: "must be at most 7 days"
        })
      )
    }
  }
  return problems
}
