/**
 * Routing: which targets may serve a request, in which order, and why every other target of the
 * workflow's route was excluded. Deterministic: the same command, health state and router state
 * give the same decision.
 *
 * `resolve` runs, in order: the command's own checks (workflow, regions, options), the input's
 * measure, the hard filters in route order (`internal/router/eligibility`, then the breaker), the
 * selection (the route's order, or `internal/router/scoring`), the canary's side
 * (`internal/router/canary`) and a deprecation warning. Session affinity, hysteresis leaders and
 * the lifecycle view live in a `RouterState` owned by the gateway (`internal/router/state`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { fromFailure, type GatewayError } from "./Errors.js"
import { Health } from "./Health.js"
import type { ModelCommand } from "./ModelCommand.js"
import type { CompiledWorkflow } from "./internal/compiled.js"
import type { Route } from "./internal/router/decision.js"
import { decide } from "./internal/router/engine.js"
import { type RouterState, RoutedWorkflows, stateOf } from "./internal/router/state.js"

export { score } from "./internal/router/scoring.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** The compiled workflows of the running configuration (they carry the router's state). */
  readonly workflows: ReadonlyMap<string, CompiledWorkflow>
  /** What the router remembers between decisions (owned by the gateway). */
  readonly state: RouterState
  readonly resolve: (command: ModelCommand, mode?: "generate" | "stream") => Effect.Effect<Route, GatewayError>
}

/**
 * The router over the compiled `workflows`, remembering in `state` (the gateway's; a fresh one when
 * omitted).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  state: RouterState = stateOf(workflows)
): Effect.Effect<Service, never, Health> =>
  Effect.map(Health, (health): Service => {
    const table = new RoutedWorkflows(workflows, state)
    return {
      workflows: table,
      state,
      resolve: (command, mode = "generate") =>
        Effect.mapError(
          Effect.suspend(() => decide(table, health, command, mode, true)),
          (failure) => fromFailure(failure, {})
        )
    }
  })
