/**
 * The one shape every modelgate counter is declared with: a name, a description, incremental.
 */
import * as Metric from "effect/Metric"

/** An incremental counter named `name`. */
export const counter = (name: string, description: string): Metric.Metric.Counter<number> =>
  Metric.counter(name, { description, incremental: true })
