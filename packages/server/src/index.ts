/**
 * `@modelgate/server`: modelgate's workflows, budgets and evidence behind an OpenAI-compatible
 * HTTP server (chat completions, responses, embeddings, models), with virtual API keys bound to
 * tenants.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as DevDefault from "./DevDefault.js"
/** @since 0.1.0 */
export * as JsonSchemaCodec from "./JsonSchemaCodec.js"
/** @since 0.1.0 */
export * as Keys from "./Keys.js"
/** @since 0.1.0 */
export * as Launch from "./Launch.js"
/** @since 0.1.0 */
export * as Observability from "./Observability.js"
/** @since 0.1.0 */
export * as Server from "./Server.js"
/** @since 0.1.0 */
export * as ServerConfig from "./ServerConfig.js"
