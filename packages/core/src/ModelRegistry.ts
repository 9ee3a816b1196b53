/**
 * The registry of targets, by ref. Built from the validated configuration; read-only at run time.
 *
 * @since 0.1.0
 */
import { Context, Option } from "effect"
import type { ModelTarget, TargetRef } from "./ModelTarget.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly get: (ref: TargetRef | string) => Option.Option<ModelTarget>
  readonly all: ReadonlyArray<ModelTarget>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class ModelRegistry extends Context.Tag("@modelgate/core/ModelRegistry")<ModelRegistry, Service>() {}

/**
 * @since 0.1.0
 * @category Constructors
 */
export const make = (targets: ReadonlyArray<ModelTarget>): Service => {
  const byRef = new Map<string, ModelTarget>(targets.map((t) => [t.ref, t]))
  return ModelRegistry.of({ get: (ref) => Option.fromNullable(byRef.get(ref)), all: targets })
}
