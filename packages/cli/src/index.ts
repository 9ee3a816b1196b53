/**
 * modelgate's command line: `modelgate check`, `modelgate explain`, `modelgate mock`.
 *
 * @since 0.2.0
 */

/** @since 0.2.0 */
export * as Check from "./Check.js"
/** @since 0.2.0 */
export * as Cli from "./Cli.js"
/** @since 0.2.0 */
export * as ConfigFile from "./ConfigFile.js"
/** @since 0.2.0 */
export * as Explain from "./Explain.js"
