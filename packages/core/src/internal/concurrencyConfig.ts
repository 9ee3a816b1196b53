/**
 * The concurrency configuration's schema (decodable from JSON) and its cross-field checks: what
 * `Concurrency.decode`, `Concurrency.make` and `Concurrency.layerConfig` apply.
 */
import { Schema } from "effect"
import { ConfigProblem } from "../Errors.js"
import { TenantId } from "../ModelCommand.js"
import { isReservedKey, reservedKeyDetail, reservedKeysOf, safeRecord, segment } from "./issues.js"
import * as Literals from "./literals.js"

/** One tenant's permits. */
const TenantPermits = Schema.Struct({
  /** Permits only this tenant may use, taken out of `permits`. Default 0. */
  reserved: Schema.optional(Schema.Number),
  /** Most permits this tenant holds at once. Default: reserved + the shared pool. */
  max: Schema.optional(Schema.Number)
})

/**
 * A workflow's share of each tenant's permits.
 */
const WorkflowPermits = Schema.Struct({
  /** Permits of the tenant kept for this workflow (its other workflows cannot take them). Default 0. */
  reserved: Schema.optional(Schema.Number),
  /** Most of the tenant's permits this workflow holds at once. Default: no cap. */
  max: Schema.optional(Schema.Number)
})

/**
 * Concurrency configuration (decodable from JSON).
 */
export const ConcurrencyConfig = Schema.Struct({
  /** Total permits: calls in flight at once in this process. */
  permits: Schema.Number,
  /** By tenant id; `__proto__`, `constructor` and `prototype` are refused as keys, never dropped. */
  tenants: Schema.optional(safeRecord(TenantPermits)),
  /** Most permits an undeclared tenant holds at once. Default: the whole shared pool. */
  undeclaredMax: Schema.optional(Schema.Number),
  /** In-flight attempts per target ref (reserved names refused as keys, like `tenants`). */
  targets: Schema.optional(safeRecord(Schema.Number)),
  /**
   * By workflow name: its share of every tenant's permits (`max`, `reserved`). Since 0.3.0.
   */
  workflows: Schema.optional(safeRecord(WorkflowPermits))
})

/** Options of `Concurrency.make`: the decoded configuration. */
export type Options = typeof ConcurrencyConfig.Type

const isTenantId = Schema.is(TenantId)
const isWorkflowName = Schema.is(Literals.WorkflowName)
const isCount = (n: number, min: number) => Number.isInteger(n) && n >= min

/**
 * Every problem of a concurrency configuration (empty when valid): counts that are not integers
 * or not positive, a reserved total above `permits`, a `max` below its tenant's `reserved` or
 * above what the tenant can ever reach, malformed tenant ids, reserved keys (`__proto__`,
 * `constructor`, `prototype`) among tenants, targets or workflows, a workflow's `max` below its
 * `reserved`, workflow reservations adding up to more than a tenant's limit
 * (`WORKFLOW_RESERVED_ABOVE_TENANT_LIMIT`, on the tenant's path, or `concurrency.undeclaredMax` for
 * undeclared tenants). Problems name paths, never values.
 */
export const validate = (options: Options): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const add = (path: string, reason: string, detail: string) =>
    problems.push(new ConfigProblem({ path, reason, detail }))
  const count = (path: string, n: number, min: number) => {
    if (isCount(n, min)) return true
    const reason = !Number.isInteger(n) ? "NOT_AN_INTEGER" : min === 0 ? "NEGATIVE_LIMIT" : "NON_POSITIVE_LIMIT"
    add(path, reason, `must be an integer ≥ ${min}`)
    return false
  }
  count("concurrency.permits", options.permits, 1)
  for (const key of reservedKeysOf(options.tenants))
    add(`concurrency.tenants.${key}`, "RESERVED_KEY", reservedKeyDetail)
  for (const key of reservedKeysOf(options.targets))
    add(`concurrency.targets.${key}`, "RESERVED_KEY", reservedKeyDetail)
  const tenants = Object.entries(options.tenants ?? {}).filter(([tenant, t]) => {
    if (isReservedKey(tenant)) return false
    if (typeof t === "object" && t !== null) return true
    add(`concurrency.tenants.${segment(tenant)}`, "INVALID_VALUE", "must be an object")
    return false
  })
  let reservedTotal = 0
  for (const [, t] of tenants) {
    if (t.reserved !== undefined && isCount(t.reserved, 0)) reservedTotal += t.reserved
  }
  const shared = Math.max(0, options.permits - reservedTotal)
  for (const [tenant, t] of tenants) {
    const path = `concurrency.tenants.${segment(tenant)}`
    if (!isTenantId(tenant)) add(path, "INVALID_TENANT", "not a valid tenant id")
    const reserved = t.reserved ?? 0
    count(`${path}.reserved`, reserved, 0)
    if (t.max !== undefined && count(`${path}.max`, t.max, 1)) {
      if (isCount(reserved, 0) && t.max < reserved) {
        add(`${path}.max`, "MAX_BELOW_RESERVED", "max is below the tenant's reserved permits")
      } else if (isCount(reserved, 0) && t.max > reserved + shared) {
        add(`${path}.max`, "MAX_ABOVE_CAPACITY", "max exceeds the tenant's reserved permits plus the shared pool")
      }
    }
  }
  if (Number.isFinite(options.permits) && reservedTotal > options.permits) {
    add("concurrency.tenants", "RESERVED_ABOVE_POOL", "the tenants' reserved permits add up to more than permits")
  }
  if (options.undeclaredMax !== undefined) {
    if (count("concurrency.undeclaredMax", options.undeclaredMax, 1) && options.undeclaredMax > shared) {
      add("concurrency.undeclaredMax", "MAX_ABOVE_CAPACITY", "exceeds the shared pool")
    }
  }
  for (const [ref, cap] of Object.entries(options.targets ?? {})) {
    if (!isReservedKey(ref)) count(`concurrency.targets.${segment(ref)}`, cap, 1)
  }
  validateWorkflows(options, shared, add, count)
  return problems
}

/** The tenant's limit: its `max`, else its reserved permits plus the shared pool. */
export const tenantLimit = (t: typeof TenantPermits.Type, shared: number): number => t.max ?? (t.reserved ?? 0) + shared

/** Sum of the valid workflow reservations. */
export const workflowsReserved = (options: Options): number => {
  let total = 0
  for (const [name, w] of Object.entries(options.workflows ?? {})) {
    if (!isReservedKey(name) && w.reserved !== undefined && isCount(w.reserved, 0)) total += w.reserved
  }
  return total
}

/** The problems of `workflows`: counts, names, `max` below `reserved`, reservations above a tenant's limit. */
const validateWorkflows = (
  options: Options,
  shared: number,
  add: (path: string, reason: string, detail: string) => void,
  count: (path: string, n: number, min: number) => boolean
): void => {
  for (const key of reservedKeysOf(options.workflows))
    add(`concurrency.workflows.${key}`, "RESERVED_KEY", reservedKeyDetail)
  for (const [name, w] of Object.entries(options.workflows ?? {})) {
    if (isReservedKey(name)) continue
    const path = `concurrency.workflows.${segment(name)}`
    if (typeof w !== "object" || w === null) {
      add(path, "INVALID_VALUE", "must be an object")
      continue
    }
    if (!isWorkflowName(name)) add(path, "INVALID_WORKFLOW", "not a valid workflow name")
    const reserved = w.reserved ?? 0
    const reservedOk = count(`${path}.reserved`, reserved, 0)
    if (w.max !== undefined && count(`${path}.max`, w.max, 1) && reservedOk && w.max < reserved) {
      add(`${path}.max`, "MAX_BELOW_RESERVED", "max is below the workflow's reserved permits")
    }
  }
  const kept = workflowsReserved(options)
  if (kept === 0) return
  const detail = "the workflows' reserved permits add up to more than this tenant's limit"
  for (const [tenant, t] of Object.entries(options.tenants ?? {})) {
    if (isReservedKey(tenant) || typeof t !== "object" || t === null) continue
    if (kept > tenantLimit(t, shared)) {
      add(`concurrency.tenants.${segment(tenant)}`, "WORKFLOW_RESERVED_ABOVE_TENANT_LIMIT", detail)
    }
  }
  // Undeclared tenants can come whenever the shared pool or `undeclaredMax` lets them in.
  const undeclared = options.undeclaredMax ?? shared
  if (undeclared > 0 && kept > undeclared) {
    add("concurrency.undeclaredMax", "WORKFLOW_RESERVED_ABOVE_TENANT_LIMIT", `${detail} (undeclared tenants)`)
  }
}
