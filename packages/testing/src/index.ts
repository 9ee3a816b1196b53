/**
 * modelgate test kit.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as ScriptedProvider from "./ScriptedProvider.js"
/**
 * The mock provider server: the tag with its constructors and types, the same value as
 * `import { MockProviderServer } from "@modelgate/testing/MockProviderServer"`.
 *
 * @since 0.1.0
 */
export { MockProviderServer } from "./MockProviderServer.js"
/** @since 0.2.0 */
export * as MockScript from "./MockScript.js"
/** @since 0.2.0 */
export * as MockServe from "./MockServe.js"
/** @since 0.2.0 */
export * as RedisServer from "./RedisServer.js"
/** @since 0.2.0 */
export * as AdapterFixtures from "./AdapterFixtures.js"
/** @since 0.2.0 */
export * as RecordingTracer from "./RecordingTracer.js"
/** @since 0.2.0 */
export * as DeadlineScenarios from "./DeadlineScenarios.js"
/** @since 0.2.0 */
export * as BudgetScenarios from "./BudgetScenarios.js"
