/**
 * The support assistant's gateway configuration: seven targets at four providers in two regions,
 * and four workflows, each with its own policy. The config is plain JSON (what you would keep in a
 * file); output schemas and degrade handlers are code and are passed next to it.
 */
import type { GatewayConfig } from "@modelgate/core"
import type { ModelCommand } from "@modelgate/core/ModelCommand"
import { Effect, Schema } from "effect"

export const refs = {
  mini: "model://openai/gpt-4.1-mini@eu",
  gpt: "model://openai/gpt-4.1@eu",
  haiku: "model://anthropic/claude-haiku-4-5@eu",
  sonnet: "model://anthropic/claude-sonnet-4-5@eu",
  flash: "model://gemini/gemini-2.5-flash@us",
  pro: "model://gemini/gemini-2.5-pro@us",
  llama: "model://vllm-eu/llama-3.3-70b@eu"
} as const

/** Provider ids of the adapters the config needs. */
export const providerIds = ["openai", "anthropic", "gemini", "vllm-eu"] as const

// ---------------------------------------------------------------------------------------------
// Output schemas
// ---------------------------------------------------------------------------------------------

export const Classification = Schema.Struct({
  category: Schema.Literal("billing", "technical", "shipping", "account", "other"),
  confidence: Schema.Number
})
export type Classification = typeof Classification.Type

/** Order ids look like `ORD-123456`; fields the model cannot find are `null`. */
export const TicketFields = Schema.Struct({
  orderId: Schema.NullOr(Schema.String.pipe(Schema.pattern(/^ORD-\d{6}$/))),
  product: Schema.NullOr(Schema.String),
  needsManualEntry: Schema.Boolean
})
export type TicketFields = typeof TicketFields.Type

// ---------------------------------------------------------------------------------------------
// Prompts (the gateway records their id and version; it does not own them)
// ---------------------------------------------------------------------------------------------

export const prompts = {
  classify: { id: "ticket.classify", version: "3" },
  extract: { id: "ticket.extract", version: "2" },
  draftReply: { id: "ticket.draftReply", version: "5" },
  followUp: { id: "ticket.followUp", version: "1" }
} as const

/** The system message of a prompt. The `Prompt:` line lets the mock server tell workflows apart. */
export const systemPrompt = (prompt: { readonly id: string; readonly version: string }): string => {
  const task: Record<string, string> = {
    "ticket.classify": "Classify the support ticket. Answer with its category and your confidence between 0 and 1.",
    "ticket.extract":
      "Extract the order id (ORD-######) and the product from the ticket. Use null for what is not there.",
    "ticket.draftReply": "Draft a short, friendly reply to the customer. Do not promise refunds you cannot see.",
    "ticket.followUp":
      "Decide whether the ticket needs a follow-up. If it does, call create_follow_up_task once, then confirm to the agent what you scheduled."
  }
  return `Prompt: ${prompt.id} v${prompt.version}\nYou are the support assistant of a software company. ${task[prompt.id] ?? ""}`
}

// ---------------------------------------------------------------------------------------------
// Degraded modes (non-model answers when every route failed for availability reasons)
// ---------------------------------------------------------------------------------------------

const keywordRules: ReadonlyArray<readonly [RegExp, Classification["category"]]> = [
  [/\b(charged|invoice|refund|payment|billing)\b/i, "billing"],
  [/\b(crash|error|bug|export|update)\b/i, "technical"],
  [/\b(order|deliver|arrived|tracking|shipping)\b/i, "shipping"],
  [/\b(account|password|login|close)\b/i, "account"]
]

const userText = (command: ModelCommand): string =>
  command.messages.map((m) => (m._tag === "user" && typeof m.content === "string" ? m.content : "")).join("\n")

/** `ticket.classify` without a model: first matching keyword rule, low confidence. */
export const classifyByKeywords = (command: ModelCommand) =>
  Effect.sync((): Classification => {
    const text = userText(command)
    const hit = keywordRules.find(([re]) => re.test(text))
    return { category: hit?.[1] ?? "other", confidence: hit === undefined ? 0 : 0.4 }
  })

/** `ticket.extract` without a model: nothing extracted, flagged for manual entry. */
export const extractManually = () =>
  Effect.succeed<TicketFields>({ orderId: null, product: null, needsManualEntry: true })

export const cannedReply =
  "Thank you for contacting us. We have received your ticket and a member of our support team will reply within one business day."

// ---------------------------------------------------------------------------------------------
// The configuration
// ---------------------------------------------------------------------------------------------

/** What the config says of a target besides what its ref names (provider, model, region). */
interface TargetOptions {
  readonly tier: "small" | "medium" | "large"
  /** Defaults to `public` and `internal`. */
  readonly dataClasses?: ReadonlyArray<string>
  /** Structured output. */
  readonly json: { readonly mode: string; readonly supportedFeatures?: ReadonlyArray<string> }
  readonly price: readonly [input: number, output: number]
  readonly maxOutput: number
  readonly limits: {
    readonly maxAttempts: number
    readonly perAttemptTimeout: number
    readonly minimumAttemptTime: number
    readonly ttftTimeout?: number
    readonly streamIdleTimeout?: number
  }
}

/** `model://<provider>/<model>@<region>`: the parts of one of {@link refs}. */
const refParts = (ref: string) => {
  const [, provider = "", model = "", region = ""] = /^model:\/\/([^/]+)\/([^@]+)@(.+)$/.exec(ref) ?? []
  return { provider, model, region }
}

const pricingVersion = "demo-prices-2026-01"

/**
 * The config as plain JSON. `scale` multiplies every duration: 1 against the in-process mock server
 * (calls take milliseconds), more against real providers (calls take seconds).
 */
export const configJson = (scale = 1) => {
  const ms = (n: number) => Math.round(n * scale)
  const target = (ref: string, t: TargetOptions) => ({
    ref,
    provider: refParts(ref).provider,
    model: refParts(ref).model,
    tier: t.tier,
    regions: [refParts(ref).region],
    dataClasses: t.dataClasses ?? ["public", "internal"],
    capabilities: {
      tools: true,
      streaming: true,
      structuredOutput: t.json,
      contextWindow: 128_000,
      maxOutputTokens: t.maxOutput
    },
    pricing: { inputPerMillion: t.price[0], outputPerMillion: t.price[1], currency: "USD", pricingVersion },
    limits: {
      maxAttempts: t.limits.maxAttempts,
      perAttemptTimeout: ms(t.limits.perAttemptTimeout),
      minimumAttemptTime: ms(t.limits.minimumAttemptTime),
      ...(t.limits.ttftTimeout !== undefined ? { ttftTimeout: ms(t.limits.ttftTimeout) } : {}),
      ...(t.limits.streamIdleTimeout !== undefined ? { streamIdleTimeout: ms(t.limits.streamIdleTimeout) } : {})
    }
  })
  const small = { maxAttempts: 2, perAttemptTimeout: 500, minimumAttemptTime: 100 }
  // Large models stream: a first token within 300 ms, no gap over 300 ms. One attempt each: when a
  // big model is slow, the next route is a better bet than the same one again.
  const large = {
    maxAttempts: 1,
    perAttemptTimeout: 2000,
    minimumAttemptTime: 200,
    ttftTimeout: 300,
    streamIdleTimeout: 300
  }
  const large400 = { ...large, ttftTimeout: 400 }
  const withConfidential = ["public", "internal", "confidential"]
  const strict = { mode: "json_schema_strict" }
  const schema = { mode: "json_schema" }
  return {
    targets: [
      target(refs.mini, { tier: "small", json: strict, price: [0.4, 1.6], maxOutput: 16_384, limits: small }),
      target(refs.gpt, { tier: "large", json: strict, price: [2, 8], maxOutput: 16_384, limits: large }),
      target(refs.haiku, {
        tier: "small",
        dataClasses: withConfidential,
        json: schema,
        price: [1, 5],
        maxOutput: 8_192,
        limits: small
      }),
      target(refs.sonnet, { tier: "large", json: schema, price: [3, 15], maxOutput: 8_192, limits: large400 }),
      target(refs.flash, { tier: "small", json: schema, price: [0.3, 2.5], maxOutput: 8_192, limits: small }),
      target(refs.pro, { tier: "large", json: schema, price: [1.25, 10], maxOutput: 8_192, limits: large400 }),
      // Self-hosted in the EU (vLLM, OpenAI-compatible): the only other home for confidential data.
      target(refs.llama, {
        tier: "medium",
        dataClasses: withConfidential,
        json: schema,
        price: [0.2, 0.2],
        maxOutput: 4_096,
        limits: { ...small, perAttemptTimeout: 800 }
      })
    ],
    workflows: [
      {
        name: "ticket.classify",
        policyVersion: "classify-policy-4",
        prompt: prompts.classify,
        output: { schema: "Classification", schemaVersion: "1" },
        // Small, fast models; a tight deadline; keyword rules when no model answers in time.
        route: [refs.mini, refs.haiku, refs.flash],
        timeout: ms(1200),
        retry: { baseDelay: ms(50), maxDelay: ms(200) },
        regions: ["eu", "us"],
        dataClass: "internal",
        maxOutputTokens: 64,
        degrade: { _tag: "handler", name: "classifyByKeywords" }
      },
      {
        name: "ticket.extract",
        policyVersion: "extract-policy-2",
        prompt: prompts.extract,
        output: { schema: "TicketFields", schemaVersion: "2" },
        // EU-only and confidential: this policy's choice for the structured order record it produces
        // (order id, product). The other workflows send the same ticket text as `internal`, so with
        // the EU down acme's draft, served from the US, can quote the order id while this extraction
        // degrades: data classes are declared per workflow (or command), never detected in the text.
        // Only routes whose structured output was tested with this schema: gpt-4.1-mini's strict
        // mode rejects `pattern`, so it is not here (startup validation would refuse it with
        // SCHEMA_FEATURE_UNSUPPORTED).
        route: [refs.haiku, refs.llama],
        timeout: ms(1500),
        retry: { baseDelay: ms(50), maxDelay: ms(200) },
        regions: ["eu"],
        dataClass: "confidential",
        maxOutputTokens: 128,
        degrade: { _tag: "handler", name: "extractManually" }
      },
      {
        name: "ticket.draftReply",
        policyVersion: "reply-policy-7",
        prompt: prompts.draftReply,
        requires: { streaming: true },
        // Longer output from large models, streamed, with TTFT and total limits on every route.
        route: [refs.gpt, refs.sonnet, refs.pro],
        timeout: ms(3000),
        retry: { baseDelay: ms(100), maxDelay: ms(400) },
        regions: ["eu", "us"],
        dataClass: "internal",
        maxOutputTokens: 400,
        degrade: { _tag: "static", value: cannedReply }
      },
      {
        name: "ticket.followUp",
        policyVersion: "followup-policy-1",
        prompt: prompts.followUp,
        requires: { tools: true },
        // An agent step that may call a side-effecting tool: never degraded, never retried after
        // an attempt that may have been processed (AmbiguousOutcome); the agent retries the step
        // and the ToolLedger keeps the tool from running twice.
        route: [refs.haiku, refs.mini, refs.flash],
        timeout: ms(2000),
        retry: { baseDelay: ms(50), maxDelay: ms(200) },
        regions: ["eu", "us"],
        dataClass: "internal",
        maxOutputTokens: 256
      }
    ]
  }
}

/** What only code can give: the output schemas and the degrade handlers, by name. */
export const code: Omit<GatewayConfig.Definition, "config"> = {
  schemas: { Classification, TicketFields },
  degradeHandlers: { classifyByKeywords, extractManually }
}
