/**
 * The embedded default of `serve` without `--config`: memory stores, the loopback mock provider of
 * `@modelgate/testing` (a real HTTP server speaking the OpenAI wire) behind the real OpenAI adapter,
 * three workflows and one freshly generated dev key. Works on a fresh machine with no keys and no
 * network.
 *
 * - `chat` — free text, tools, streaming (alias `gpt-4o-mini`)
 * - `extract` — structured output in the `Ticket` schema
 * - `embed` — embeddings (8 dimensions)
 *
 * @since 0.1.0
 */
import type { Budgets, CallRecorder } from "@modelgate/core"
import { MockProviderServer } from "@modelgate/testing"
import { Effect, type Layer, Schema, type Scope } from "effect"
import * as OpenAi from "@modelgate/adapters/openai"
import { hashKey } from "./Keys.js"
import * as Launch from "./Launch.js"
import type * as Server from "./Server.js"
import { type KeyRateLimit, type Limits, ServerConfig } from "./ServerConfig.js"

const target = "model://openai/mock-chat@local"
const embedTarget = "model://openai/mock-embed@local"
const pricingVersion = "dev-prices-1"

/**
 * The gateway configuration of the dev default (`GatewayConfig.Encoded`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const gatewayConfig = {
  targets: [
    {
      ref: target,
      provider: "openai",
      model: "mock-chat",
      regions: ["local"],
      dataClasses: ["internal"],
      pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6, pricingVersion },
      capabilities: {
        contextWindow: 128_000,
        maxOutputTokens: 4096,
        tools: true,
        streaming: true,
        structuredOutput: { mode: "json_schema_strict" },
        options: [
          "temperature",
          "topP",
          "seed",
          "stop",
          "parallelToolCalls",
          "presencePenalty",
          "frequencyPenalty",
          "userId"
        ]
      },
      limits: { maxAttempts: 2, perAttemptTimeout: 20_000, minimumAttemptTime: 50 }
    },
    {
      ref: embedTarget,
      provider: "openai",
      model: "mock-embed",
      regions: ["local"],
      dataClasses: ["internal"],
      pricing: { inputPerMillion: 0.02, outputPerMillion: 0, pricingVersion },
      capabilities: { streaming: false, contextWindow: 8191, maxOutputTokens: 1, embeddings: { dimensions: 8 } },
      limits: { maxAttempts: 2, perAttemptTimeout: 5000, minimumAttemptTime: 50 }
    }
  ],
  workflows: [
    {
      name: "chat",
      policyVersion: "dev-1",
      prompt: { id: "chat", version: "1" },
      route: [target],
      timeout: 30_000,
      regions: ["local"],
      dataClass: "internal",
      options: {
        temperature: { min: 0, max: 2 },
        topP: { min: 0, max: 1 },
        seed: { min: 0, max: 2147483647 },
        stop: {},
        presencePenalty: { min: -2, max: 2 },
        frequencyPenalty: { min: -2, max: 2 },
        parallelToolCalls: { allowed: [true, false] },
        userId: {}
      }
    },
    {
      name: "extract",
      policyVersion: "dev-1",
      prompt: { id: "extract", version: "1" },
      output: { schema: "Ticket", schemaVersion: "1" },
      route: [target],
      timeout: 30_000,
      regions: ["local"],
      dataClass: "internal"
    },
    {
      name: "embed",
      policyVersion: "dev-1",
      prompt: { id: "embed", version: "1" },
      route: [embedTarget],
      timeout: 10_000,
      regions: ["local"],
      dataClass: "internal",
      embedding: { family: "mock-embed", dimensions: 8 }
    }
  ]
}

/**
 * The output schema of `extract`.
 *
 * @since 0.1.0
 * @category Constants
 */
export const Ticket = Schema.Struct({
  category: Schema.Literal("billing", "technical", "other"),
  summary: Schema.String
})

const usage = { input: 12, output: 11 }

/**
 * The dev default's text answer (for requests that ask for no structured output).
 *
 * @since 0.1.0
 * @category Constants
 */
export const greeting = "Hello from the modelgate mock provider. Ask me anything."

/**
 * The mock's handler: a text answer unless the request asks for structured output.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const textAnswer: MockProviderServer.Handler = (request) => {
  const body = request.body
  const structured = typeof body === "object" && body !== null && ("response_format" in body || "text" in body)
  return structured ? undefined : MockProviderServer.success({ text: greeting, usage })
}

/**
 * @since 0.1.0
 * @category Options
 */
export interface Options {
  readonly port?: number | undefined
  /** The dev key (default: a fresh random one). */
  readonly key: string
  readonly rateLimit?: KeyRateLimit | undefined
  readonly limits?: Partial<Limits> | undefined
  readonly recorder?: Layer.Layer<CallRecorder.CallRecorder> | undefined
  /** The budgets service (in place of `budget`). */
  readonly budgets?: Layer.Layer<Budgets.Budgets> | undefined
  /** Tenant budget in USD (default: unlimited). */
  readonly budget?: number | undefined
  readonly mock?: MockProviderServer.Options | undefined
}

/**
 * A running dev server and its mock provider.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Dev {
  readonly server: Server.Running
  readonly mock: MockProviderServer.Service
}

/**
 * Starts the mock provider and the server in the current scope.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const start = (options: Options): Effect.Effect<Dev, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer.make({
      record: false,
      // A plain success answers a structured-output request with a value of the requested schema.
      defaultBehavior: MockProviderServer.success({ usage }),
      ...options.mock
    }).pipe(Effect.mapError(() => new Error("the mock provider did not start")))
    yield* mock.setHandler(textAnswer)
    const config = yield* Schema.decodeUnknown(ServerConfig)({
      listen: { host: "127.0.0.1", port: options.port ?? 8787 },
      keys: [
        {
          id: "dev",
          sha256: hashKey(options.key),
          tenant: "dev",
          workflows: ["*"],
          ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit })
        }
      ],
      aliases: { "gpt-4o-mini": "chat" },
      limits: options.limits ?? {},
      gateway: gatewayConfig,
      ...(options.budget === undefined ? {} : { budgets: { tenants: { dev: { limit: options.budget } } } })
    })
    const server = yield* Launch.start(config, {
      adapters: OpenAi.layer({ id: "openai", baseUrl: mock.baseUrl("openai") }),
      schemas: { Ticket },
      recorder: options.recorder,
      budgets: options.budgets
    })
    return { server, mock }
  })
