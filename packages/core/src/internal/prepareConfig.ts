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
import * as Lifecycle from "./lifecycle.js"
import type * as engine from "./pipeline.js"
import type { MetricLabelValues } from "./call.js"

/** What a gateway keeps across its configurations: the context, its services and remembered state. */
export interface Builder {
  readonly built: Context.Context<never>
  readonly reservationTtl: GatewayConfig.ValidateOptions["reservationTtl"]
  readonly health: Context.Tag.Service<typeof Health>
  readonly canaries: CanaryController.Service
  /** What the router remembers (session affinity, hysteresis, the lifecycle view), across reloads. */
  readonly routerState: Router.RouterState
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

/** `cfg_` and the FNV-1a hash (32 bits, hex) of the configuration's encoded JSON. */
export const hashVersion = (config: GatewayConfig.GatewayConfig): string => {
  const encoded = encodeConfig(config)
  const text = JSON.stringify(Either.isRight(encoded) ? encoded.right : null)
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return `cfg_${(h >>> 0).toString(16).padStart(8, "0")}`
}

/** The adapters of the builder's context for the providers `def` names. */
const adaptersOf = (builder: Builder, def: GatewayConfig.Definition) => {
  const adapters = new Map<string, ProviderAdapter.ProviderAdapter>()
  for (const t of def.config.targets) {
    const found = Context.getOption(builder.built, ProviderAdapter.tag(t.provider))
    if (found._tag === "Some") adapters.set(t.provider, found.value)
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
    const problems = GatewayConfig.validate(def, new Set(adapters.keys()), checks)
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
      version: version ?? hashVersion(def.config),
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
