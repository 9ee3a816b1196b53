/**
 * modelgate test kit.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as ScriptedProvider from "./ScriptedProvider.js"
/** @since 0.1.0 */
export * as MockProviderServer from "./MockProviderServer.js"
/** @since 0.5.0 */
export * as RedisServer from "./RedisServer.js"
