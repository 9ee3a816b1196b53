/**
 * The scores of a ranking as numbers (typed arrays), made into `TargetScore` objects only when read.
 */
import type { ModelTarget } from "../../ModelTarget.js"
import type { HealthStatus, TargetScore } from "../../RouteDecision.js"

/** Terms per target in one typed array: quality, latency, cost (the others are rarely not their default). */
export const termCount = 3

/**
 * Scores of a ranking, kept as numbers and made into {@link TargetScore} objects only when read
 * (evidence, the decision value): a decision over many targets pays for the objects once, if ever.
 */
export class LazyScores {
  private built: ReadonlyArray<TargetScore> | undefined
  constructor(
    private readonly targets: ReadonlyArray<ModelTarget>,
    /** quality, latency, cost per target */
    private readonly terms: Float64Array,
    /** totals × 10⁴ */
    private readonly totals: Int32Array,
    /** health terms where a record exists (else 1) */
    private readonly healths: ReadonlyArray<number | undefined> | undefined,
    private readonly statuses: ReadonlyArray<HealthStatus | undefined> | undefined,
    private readonly observed: ReadonlyArray<number | undefined> | undefined,
    private readonly stickyAt: number,
    private readonly deprecatedPenalty: number,
    private readonly order: ReadonlyArray<number> | undefined
  ) {}
  get value(): ReadonlyArray<TargetScore> {
    if (this.built === undefined) {
      const n = this.targets.length
      const out = new Array<TargetScore>(n)
      const x = this.terms
      for (let k = 0; k < n; k++) {
        const i = this.order === undefined ? k : this.order[k]!
        const o = i * termCount
        const t = this.targets[i]!
        const base = {
          target: t.ref,
          quality: x[o]!,
          latency: x[o + 1]!,
          cost: x[o + 2]!,
          health: this.healths?.[i] ?? 1
        }
        const status = this.statuses?.[i]
        const observedP95Ms = this.observed?.[i]
        const tail = {
          affinity: i === this.stickyAt ? 1 : 0,
          penalty: t.status === "deprecated" ? this.deprecatedPenalty : 0,
          total: this.totals[i]! / 10_000
        }
        out[k] =
          status === undefined
            ? { ...base, ...tail }
            : observedP95Ms === undefined
              ? { ...base, status, ...tail }
              : { ...base, status, observedP95Ms, ...tail }
      }
      this.built = out
    }
    return this.built
  }
}
