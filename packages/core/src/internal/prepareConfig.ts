/**
 * One step of building (or reloading) a gateway: find the adapters a configuration names in the
 * context the gateway is built in, validate the configuration against them, compile it and build
 * its router. Used by `ModelGateway.make` for the first configuration and for every `reload`.
 */
import { Context, Effect, Either, Schema } from "effect"
import type * as CanaryController from "../CanaryController.js"
import { GatewayConfigError } from "../Errors.js"
import * as GatewayConfig from "../GatewayConfig.js"
import { Health } from "../Health.js"
import type * as ModelOptions from "../ModelOptions.js"
import * as ProviderAdapter from "../ProviderAdapter.js"
import * as Router from "../Router.js"
import type { RouterState } from "./router/state.js"
import { ModelTarget } from "../ModelTarget.js"
import { Workflow } from "../Workflow.js"
import * as Lifecycle from "./lifecycle.js"
import { foldSliced, withSliceYield } from "./sliceYield.js"
import type * as engine from "./pipeline.js"
import type { MetricLabelValues } from "./call.js"

/** What a gateway keeps across its configurations: the context, its services and remembered state. */
export interface Builder {
  readonly built: Context.Context<never>
  readonly reservationTtl: GatewayConfig.ValidateOptions["reservationTtl"]
  readonly health: Context.Tag.Service<typeof Health>
  readonly canaries: CanaryController.Service
  /** What the router remembers (session affinity, hysteresis, the lifecycle view), across reloads. */
  readonly routerState: RouterState
  /** New model versions running as canaries (`onNewVersion: "canary"`), across reloads. */
  readonly versionPins: Map<string, Lifecycle.VersionPin>
}

/** A validated, compiled configuration with the adapters it uses. */
export interface Prepared {
  readonly live: engine.LiveConfig
  readonly adapters: Map<string, ProviderAdapter.ProviderAdapter>
  readonly definition: GatewayConfig.Definition
}

const encodeConfig = Schema.encodeEither(GatewayConfig.GatewayConfig)
const encodeTarget = Schema.encodeEither(ModelTarget)
const encodeWorkflow = Schema.encodeEither(Workflow)

/** Targets or workflows encoded per slice of a large configuration. */
const encodedPerSlice = 100

const fnvStart = 0x811c9dc5

/** FNV-1a (32 bits) of `text`, continuing from `h` (start: {@link fnvStart}). */
const fnv1a = (h: number, text: string): number => {
  let out = h
  for (let i = 0; i < text.length; i++) {
    out ^= text.charCodeAt(i)
    out = Math.imul(out, 0x01000193)
  }
  return out
}

/**
 * The FNV-1a state `h` continued over `items`' encoded JSON joined by commas (`null` for an item
 * that does not encode; `failed` then tells), a slice at a time.
 */
const hashEach = <A, I>(
  items: ReadonlyArray<A>,
  encode: (a: A) => Either.Either<I, unknown>,
  yieldBetween: Effect.Effect<void>,
  h: number
): Effect.Effect<{ readonly h: number; readonly failed: boolean }> =>
  foldSliced<A, { readonly h: number; readonly failed: boolean }>(
    items,
    encodedPerSlice,
    yieldBetween,
    { h, failed: false },
    (state, item, i) => {
      const encoded = encode(item)
      const json = Either.isRight(encoded) ? JSON.stringify(encoded.right) : "null"
      return { h: fnv1a(i === 0 ? state.h : fnv1a(state.h, ","), json), failed: state.failed || Either.isLeft(encoded) }
    }
  )

/**
 * `cfg_` and the FNV-1a hash (32 bits, hex) of the configuration's encoded JSON. The JSON is built
 * and hashed a slice of targets and workflows at a time, so a 10,000-target configuration never
 * holds the event loop for long; the text hashed is the same as `JSON.stringify` of the whole
 * encoded configuration (its first two fields are `targets` and `workflows`).
 */
export const hashVersion = (config: GatewayConfig.GatewayConfig): Effect.Effect<string> =>
  withSliceYield((yieldBetween) =>
    Effect.gen(function* () {
      const head = '{"targets":[],"workflows":[]'
      const rest = encodeConfig(new GatewayConfig.GatewayConfig({ ...config, targets: [], workflows: [] }, true))
      const restJson = JSON.stringify(Either.isRight(rest) ? rest.right : null)
      const targets = yield* hashEach(config.targets, encodeTarget, yieldBetween, fnv1a(fnvStart, '{"targets":['))
      const workflows = yield* hashEach(
        config.workflows,
        encodeWorkflow,
        yieldBetween,
        fnv1a(targets.h, '],"workflows":[')
      )
      // Whatever does not encode hashes as the whole did then: `null`.
      if (targets.failed || workflows.failed || !restJson.startsWith(head)) return versionOf(fnv1a(fnvStart, "null"))
      return versionOf(fnv1a(workflows.h, `]${restJson.slice(head.length)}`))
    })
  )

const versionOf = (h: number): string => `cfg_${(h >>> 0).toString(16).padStart(8, "0")}`

/** The adapters of the builder's context for the providers `def` names. */
const adaptersOf = (builder: Builder, def: GatewayConfig.Definition) => {
  const adapters = new Map<string, ProviderAdapter.ProviderAdapter>()
  // Once per provider: a configuration has thousands of targets but a handful of providers.
  for (const provider of new Set(def.config.targets.map((t) => t.provider))) {
    const found = Context.getOption(builder.built, ProviderAdapter.tag(provider))
    if (found._tag === "Some") adapters.set(provider, found.value)
  }
  return adapters
}

/** What validation checks besides the configuration itself: the TTL and what the adapters allow. */
const checksOf = (
  builder: Builder,
  adapters: ReadonlyMap<string, ProviderAdapter.ProviderAdapter>
): GatewayConfig.ValidateOptions => {
  // The adapters' provider-option allowlists check workflows here and commands when they are routed.
  const providerOptions = new Map<string, ModelOptions.ProviderOptionsAllowlist>()
  const embedders = new Set<string>()
  for (const [p, adapter] of adapters) {
    if (adapter.providerOptions) providerOptions.set(p, adapter.providerOptions)
    if (adapter.embed !== undefined) embedders.add(p)
  }
  // Every workflow timeout must be shorter than the budgets' reservation TTL (checked with the rest).
  return { reservationTtl: builder.reservationTtl, providerOptions, embedders }
}

/** Validates and compiles one configuration; returns it with the adapters it uses. */
export const prepare = (
  builder: Builder,
  def: GatewayConfig.Definition,
  version: string | undefined,
  previous: ReadonlyMap<string, GatewayConfig.CompiledWorkflow> | undefined
): Effect.Effect<Prepared, GatewayConfigError> =>
  Effect.gen(function* () {
    const adapters = adaptersOf(builder, def)
    const checks = checksOf(builder, adapters)
    const problems = yield* GatewayConfig.validateYielding(def, new Set(adapters.keys()), checks)
    if (problems.length > 0) return yield* new GatewayConfigError({ problems })
    // Once per build: a workflow without policy or prompt version is recorded as "unversioned".
    yield* GatewayConfig.warnUnversioned(def.config)
    const workflows = Lifecycle.versionCanaries(previous, GatewayConfig.compile(def, checks), builder.versionPins)
    for (const c of workflows.values()) {
      if (c.workflow.canary?.rollout !== undefined) yield* builder.canaries.register(c.workflow.name, c.workflow.canary)
    }
    const router = yield* Effect.provideService(Router.make(workflows, builder.routerState), Health, builder.health)
    const live: engine.LiveConfig = {
      router,
      version: version ?? (yield* hashVersion(def.config)),
      labels: labelValuesOf(def.config)
    }
    return { live, adapters, definition: def }
  })

/** The tenants (bound to targets or workflows) and task segments the configuration names. */
const labelValuesOf = (config: GatewayConfig.GatewayConfig): MetricLabelValues => {
  const tenants = new Set<string>()
  const segments = new Set<string>()
  for (const t of config.targets) for (const tenant of t.tenants ?? []) tenants.add(tenant)
  for (const w of config.workflows) {
    for (const tenant of w.tenants ?? []) tenants.add(tenant)
    if (w.segment !== undefined) segments.add(w.segment)
  }
  return { tenants, segments }
}
