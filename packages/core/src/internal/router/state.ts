/**
 * The router's state, as one value owned by the gateway that routes with it: session affinity (the
 * target that served a session last), prompt-prefix affinity, hysteresis (each scored workflow's last best-scoring
 * target), the lifecycle view (canary controller, quality signals), the deprecated targets already
 * warned about, per-workflow values computed once (plain-request exclusions, class terms), and the
 * token counter's memory (counts of repeated texts, schema lengths).
 * Nothing here is module-level: two gateways never share a session or a leader.
 */
import type { ModelTarget, TargetRef } from "../../ModelTarget.js"
import * as TokenEstimator from "../../TokenEstimator.js"
import type { CompiledWorkflow } from "../compiled.js"
import type * as Lifecycle from "../lifecycle.js"
import type { ClassTerms, Exclusion } from "./types.js"

/**
 * Most session keys whose last target the router remembers per gateway (least recently used
 * forgotten first).
 *
 * @since 0.2.0
 * @category Constants
 */
export const maxSessionKeys = 10_000

/** What a gateway's router remembers between decisions. */
export interface RouterState {
  /** Workflow and session key → the target that served the session last, in LRU order. */
  readonly sessions: Map<string, TargetRef>
  /** Prompt-prefix key → the target that served it and until when (ms), in LRU order (`prefix.ts`). */
  readonly prefixes: Map<string, { readonly target: TargetRef; readonly until: number }>
  /** Scored workflow name → its last best-scoring target. */
  readonly leaders: Map<string, TargetRef>
  /** What routing reads of the model lifecycle; absent: configured canary shares, no quality signals. */
  readonly lifecycle: Lifecycle.View | undefined
  /** Deprecated targets a log warning was written for (once per target value). */
  readonly warned: WeakSet<ModelTarget>
  /** Per compiled workflow (so a reload starts afresh): why each route target is out for a plain request. */
  readonly plainReasons: WeakMap<CompiledWorkflow, ReadonlyArray<Exclusion | undefined>>
  /** Per compiled workflow: the class terms of its route targets (scored selection). */
  readonly classTerms: WeakMap<CompiledWorkflow, ClassTerms>
  /** Per compiled workflow: whether a route target or its canary candidate is deprecated. */
  readonly deprecated: WeakMap<CompiledWorkflow, boolean>
  /** The token counts of texts seen recently and the lengths of output schemas (`TokenEstimator.Cache`). */
  readonly tokens: TokenEstimator.Cache
}

/** A fresh router state (one per gateway), reading `lifecycle` when given. */
export const makeState = (lifecycle?: Lifecycle.View): RouterState => ({
  sessions: new Map(),
  prefixes: new Map(),
  leaders: new Map(),
  lifecycle,
  warned: new WeakSet(),
  plainReasons: new WeakMap(),
  classTerms: new WeakMap(),
  deprecated: new WeakMap(),
  tokens: TokenEstimator.makeCache()
})

/**
 * The compiled workflows of one configuration together with the state of the router that routes
 * them (`Router.Service.workflows`): a running gateway's map carries its state, so a caller that
 * holds the map routes with that gateway's memory.
 */
export class RoutedWorkflows extends Map<string, CompiledWorkflow> {
  constructor(
    workflows: Iterable<readonly [string, CompiledWorkflow]>,
    readonly state: RouterState
  ) {
    super(workflows)
  }
}

/** The state `workflows` carries; a bare map routes with a fresh state of its own (no memory between calls). */
export const stateOf = (workflows: ReadonlyMap<string, CompiledWorkflow>): RouterState =>
  workflows instanceof RoutedWorkflows ? workflows.state : makeState()

/** `map`'s value for `compiled`, made by `make` the first time. */
export const memo = <A>(map: WeakMap<CompiledWorkflow, A>, compiled: CompiledWorkflow, make: () => A): A => {
  let value = map.get(compiled)
  if (value === undefined) {
    value = make()
    map.set(compiled, value)
  }
  return value
}

const sessionId = (workflow: string, sessionKey: string) => `${workflow}\u0000${sessionKey}`

/** The target that served `sessionKey` on `workflow` last, if remembered. */
export const stickyTarget = (
  state: RouterState,
  workflow: string,
  sessionKey: string | undefined
): TargetRef | undefined => (sessionKey === undefined ? undefined : state.sessions.get(sessionId(workflow, sessionKey)))

/** Remembers that `target` served `sessionKey` on `workflow` (LRU, at most {@link maxSessionKeys} keys). */
export const remember = (state: RouterState, workflow: string, sessionKey: string, target: TargetRef): void => {
  const lru = state.sessions
  const id = sessionId(workflow, sessionKey)
  lru.delete(id)
  lru.set(id, target)
  if (lru.size > maxSessionKeys) {
    const oldest = lru.keys().next()
    if (oldest.done !== true) lru.delete(oldest.value)
  }
}
