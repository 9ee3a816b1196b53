/**
 * The persistence seam of `Budgets`: accounts of integer store units, with atomic reserve, commit
 * and release. The memory store lives here; a Redis store implements the same four operations,
 * each one round trip (one Lua script).
 *
 * Details
 *
 * - Amounts are integers of {@link unitsPerCurrency} (billionths of a currency unit), so the
 *   admission check `committed + reserved + amount ≤ limit` is exact, never off by a float rounding.
 * - An account is one tenant in one budget window, keyed `<tenant>/<window>` (e.g.
 *   `acme/m2026-11`, `acme/d2026-11-03`, `acme/total`).
 * - Every reservation carries an expiry: an unsettled reservation (its holder crashed) frees its
 *   amount at `expiresAt`. An account may be forgotten once its window is over
 *   (`accountExpiresAt`) and it holds no reservation.
 * - A commit counts all of its spend as committed, also beyond its reservation (a provider reported
 *   more than was estimated) or after its reservation expired. What does not fit under the limit
 *   is also added to `overspent` (the account is then over its limit, and no new reservation fits
 *   until its window resets or its limit is raised).
 * - Every operation fails with `StoreError` (`store: "budget"`) when the store cannot answer, and
 *   must bound its own wait (a network store times out its round trip): `Budgets` fails closed on
 *   it.
 *
 * @since 0.2.0
 */
import { Context, Layer } from "effect"
import type { Service } from "./internal/budgetStoreTypes.js"
import { makeMemory } from "./internal/budgetMemoryStore.js"

export type {
  AccountBalance,
  CommitOutcome,
  CommitRequest,
  Joint,
  JointOutcome,
  ReleaseRequest,
  ReserveOutcome,
  ReserveRequest,
  Service
} from "./internal/budgetStoreTypes.js"

/**
 * Store units per currency unit: amounts are integers of 10⁻⁹ (limits up to about 9 million).
 *
 * @since 0.2.0
 * @category Constants
 */
export const unitsPerCurrency = 1_000_000_000

/**
 * @since 0.2.0
 * @category Context
 */
export class BudgetStore extends Context.Tag("@modelgate/core/BudgetStore")<BudgetStore, Service>() {}

/**
 * A store in this process's memory: every operation is synchronous, hence atomic, and never fails
 * (`Budgets` over it reserves and settles without running an Effect). Accounts of finished windows
 * are forgotten once they hold no reservation.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<BudgetStore> = Layer.effect(BudgetStore, makeMemory)
