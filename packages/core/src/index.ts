/**
 * modelgate core.
 *
 * @since 0.1.0
 */

/** @since 0.2.0 */
export * as AgentRun from "./AgentRun.js"
/** @since 0.2.0 */
export * as BreakerStore from "./BreakerStore.js"
/** @since 0.1.0 */
export * as Budgets from "./Budgets.js"
/** @since 0.2.0 */
export * as BudgetStore from "./BudgetStore.js"
/** @since 0.1.0 */
export * as CallRecorder from "./CallRecorder.js"
/** @since 0.2.0 */
export * as CanaryController from "./CanaryController.js"
/** @since 0.2.0 */
export * as Catalogue from "./Catalogue.js"
/** @since 0.1.0 */
export * as Concurrency from "./Concurrency.js"
/** @since 0.2.0 */
export * as Disposition from "./Disposition.js"
/** @since 0.2.0 */
export * as Embeddings from "./Embeddings.js"
/** @since 0.1.0 */
export * as Errors from "./Errors.js"
/** @since 0.1.0 */
export * as GatewayConfig from "./GatewayConfig.js"
/** @since 0.1.0 */
export * as Health from "./Health.js"
/** @since 0.1.0 */
export * as JsonSchemaFeatures from "./JsonSchemaFeatures.js"
/** @since 0.1.0 */
export * as ModelCommand from "./ModelCommand.js"
/** @since 0.1.0 */
export * as ModelGateway from "./ModelGateway.js"
/** @since 0.2.0 */
export * as ModelOptions from "./ModelOptions.js"
/** @since 0.1.0 */
/** @since 0.1.0 */
export * as ModelResult from "./ModelResult.js"
/** @since 0.1.0 */
export * as ModelTarget from "./ModelTarget.js"
/** @since 0.2.0 */
export * as PermitStore from "./PermitStore.js"
/** @since 0.2.0 */
export * as Pricing from "./Pricing.js"
/** @since 0.1.0 */
export * as ProviderAdapter from "./ProviderAdapter.js"
/** @since 0.2.0 */
export * as RateLimits from "./RateLimits.js"
/** @since 0.2.0 */
export * as RateLimitStore from "./RateLimitStore.js"
/** @since 0.2.0 */
export * as ResponseCache from "./ResponseCache.js"
/** @since 0.2.0 */
export * as ResponseCacheStore from "./ResponseCacheStore.js"
/** @since 0.1.0 */
export * as RouteDecision from "./RouteDecision.js"
/** @since 0.2.0 */
export * as QualitySignals from "./QualitySignals.js"
/** @since 0.1.0 */
export * as Router from "./Router.js"
/** @since 0.2.0 */
export * as RunEvents from "./RunEvents.js"
/** @since 0.2.0 */
export * as Shadow from "./Shadow.js"
/** @since 0.2.0 */
export * as StoreHealth from "./StoreHealth.js"
/** @since 0.1.0 */
export * as StreamEvent from "./StreamEvent.js"
/** @since 0.1.0 */
export * as Telemetry from "./Telemetry.js"

/** @since 0.2.0 */
export * as Tenancy from "./Tenancy.js"
/** @since 0.1.0 */
export * as TokenEstimator from "./TokenEstimator.js"
/** @since 0.1.0 */
export * as ToolLedger from "./ToolLedger.js"
/** @since 0.2.0 */
export * as ToolLoop from "./ToolLoop.js"
/** @since 0.2.0 */
export * as ToolLedgerStore from "./ToolLedgerStore.js"
/** @since 0.1.0 */
export * as Workflow from "./Workflow.js"
