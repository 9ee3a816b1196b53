/**
 * The server's own configuration: where it listens, its virtual API keys (each bound to a tenant,
 * the workflows it may call and optional rate limits), model aliases, and the limits that harden
 * it. The gateway's configuration (`GatewayConfig.Encoded`) sits next to it in the same JSON file
 * and is validated by core exactly as in-process.
 *
 * @since 0.1.0
 */
import { Tenancy } from "@modelgate/core"
import { Effect, ParseResult, Schema } from "effect"

/** A SHA-256 digest in lower-case hex (64 characters). */
const Sha256Hex = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))

const PositiveInt = Schema.Int.pipe(Schema.positive())

/**
 * A request/token rate limit of one key, per UTC minute.
 *
 * @since 0.1.0
 * @category Models
 */
export const KeyRateLimit = Schema.Struct({
  requestsPerMinute: Schema.optional(PositiveInt),
  tokensPerMinute: Schema.optional(PositiveInt)
})
/** @since 0.1.0 */
export type KeyRateLimit = typeof KeyRateLimit.Type

/**
 * One virtual API key. Only its SHA-256 digest is stored (`sha256`, hex of the UTF-8 key); the
 * tenant of every call made with it is `tenant`, whatever the request body says.
 *
 * @since 0.1.0
 * @category Models
 */
export const ApiKey = Schema.Struct({
  /** A name for logs and evidence (never the key). */
  id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/)),
  sha256: Sha256Hex,
  /** The tenant every call made with the key runs for: vouched for by the key (`Tenancy`). */
  tenant: Tenancy.TenantId,
  /** Workflows (or aliases) the key may call; `["*"]` for every workflow. */
  workflows: Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).pipe(Schema.minItems(1)),
  rateLimit: Schema.optional(KeyRateLimit)
})
/** @since 0.1.0 */
export type ApiKey = typeof ApiKey.Type

/**
 * The limits of the HTTP server.
 *
 * @since 0.1.0
 * @category Models
 */
export const Limits = Schema.Struct({
  /** Largest request body in bytes. Default 4 MiB. */
  maxBodyBytes: Schema.optionalWith(PositiveInt, { default: () => 4 * 1024 * 1024 }),
  /** Largest total size of the request line and headers in bytes. Default 16 KiB. */
  maxHeaderBytes: Schema.optionalWith(PositiveInt, { default: () => 16 * 1024 }),
  /** Time to receive the whole request headers (slowloris). Default 10 s. */
  headersTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 10_000 }),
  /** Time to receive the whole request (headers and body). Default 30 s. */
  requestTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 30_000 }),
  /** An idle keep-alive connection is closed after this. Default 5 s. */
  keepAliveTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 5_000 }),
  /** A connection with no bytes either way for this long is closed. Default 120 s. */
  idleTimeoutMs: Schema.optionalWith(PositiveInt, { default: () => 120_000 }),
  /** Requests handled at once; past it a request gets 503 at once. Default 1024. */
  maxConcurrentRequests: Schema.optionalWith(PositiveInt, { default: () => 1024 }),
  /** On shutdown, in-flight calls get this long to finish before their connections are cut. Default 10 s. */
  shutdownGraceMs: Schema.optionalWith(PositiveInt, { default: () => 10_000 })
})
/** @since 0.1.0 */
export type Limits = typeof Limits.Type

/**
 * A provider adapter to build. The key comes from the environment variable `apiKeyEnv`, never
 * from the file.
 *
 * @since 0.1.0
 * @category Models
 */
export const ProviderSpec = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(100)),
  kind: Schema.Literal("openai", "openai-compatible", "anthropic", "gemini"),
  baseUrl: Schema.String.pipe(Schema.pattern(/^https?:\/\//)),
  apiKeyEnv: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Z_][A-Z0-9_]*$/)))
})
/** @since 0.1.0 */
export type ProviderSpec = typeof ProviderSpec.Type

/**
 * `GET /metrics` (Prometheus): served unless `enabled` is false (then 404, like an unknown path);
 * with `key` set, a scrape needs `Authorization: Bearer <that key>` (stored as its SHA-256, like
 * the API keys, which are not accepted there).
 *
 * @since 0.1.0
 * @category Models
 */
export const MetricsSettings = Schema.Struct({
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  key: Schema.optional(Schema.Struct({ sha256: Sha256Hex }))
})
/** @since 0.1.0 */
export type MetricsSettings = typeof MetricsSettings.Type

/**
 * The whole file of `serve --config <file>`.
 *
 * @since 0.1.0
 * @category Models
 */
export const ServerConfig = Schema.Struct({
  listen: Schema.optionalWith(
    Schema.Struct({
      host: Schema.optionalWith(Schema.String, { default: () => "127.0.0.1" }),
      port: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 65535)), { default: () => 8787 })
    }),
    { default: () => ({ host: "127.0.0.1", port: 8787 }) }
  ),
  keys: Schema.Array(ApiKey).pipe(Schema.minItems(1)),
  /** Model names a client may use for a workflow (`"gpt-4o-mini": "chat.general"`). */
  aliases: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
  limits: Schema.optionalWith(Limits, { default: () => Schema.decodeSync(Limits)({}) }),
  /** `GET /metrics`: on (default) or off, and the key a scrape needs. */
  metrics: Schema.optionalWith(MetricsSettings, { default: () => ({ enabled: true }) }),
  providers: Schema.optionalWith(Schema.Array(ProviderSpec), { default: () => [] }),
  /** `GatewayConfig.Encoded`, validated by core. */
  gateway: Schema.Unknown,
  /** Output schemas by name, as JSON Schema (the subset in `JsonSchemaCodec`). */
  schemas: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { default: () => ({}) }),
  /** `Budgets` options (JSON form); omitted: unlimited. */
  budgets: Schema.optional(Schema.Unknown),
  /** `Concurrency` options (JSON form); omitted: unbounded. */
  concurrency: Schema.optional(Schema.Unknown),
  /** Redis for budgets, permits, breakers and rate limits shared by several server processes. */
  redis: Schema.optional(Schema.Struct({ url: Schema.String.pipe(Schema.pattern(/^rediss?:\/\//)) })),
  /** Where CallRecords go: one log line each (default) or nowhere. */
  recorder: Schema.optionalWith(Schema.Literal("log", "none"), { default: () => "log" as const })
})
/** @since 0.1.0 */
export type ServerConfig = typeof ServerConfig.Type

/**
 * A configuration problem: paths and kinds only, never values.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ServerConfigError extends Schema.TaggedError<ServerConfigError>()("ServerConfigError", {
  problems: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `invalid server configuration: ${this.problems.join("; ")}`
  }
}

/**
 * Paths and kinds of the problems of a parse error, never the offending values.
 *
 * @since 0.1.0
 * @category Utils
 */
export const issuePaths = (error: ParseResult.ParseError): ReadonlyArray<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => {
    const path = `$${issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("")}`
    switch (issue._tag) {
      case "Missing":
        return `${path} is missing`
      case "Unexpected":
        return `${path} is not allowed`
      default:
        return `${path} is invalid`
    }
  })

/**
 * Decodes the server configuration; the gateway part is decoded later by core.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decode = (input: unknown): Effect.Effect<ServerConfig, ServerConfigError> =>
  Schema.decodeUnknown(ServerConfig, { errors: "all", onExcessProperty: "error" })(input).pipe(
    Effect.mapError((error) => new ServerConfigError({ problems: issuePaths(error) })),
    Effect.flatMap((config) => {
      const ids = new Set<string>()
      const problems: Array<string> = []
      config.keys.forEach((key, i) => {
        if (ids.has(key.id)) problems.push(`$.keys[${i}].id is a duplicate`)
        ids.add(key.id)
      })
      return problems.length === 0 ? Effect.succeed(config) : Effect.fail(new ServerConfigError({ problems }))
    })
  )
