/**
 * modelgate test kit.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as ScriptedProvider from "./ScriptedProvider.js"
