/** A configuration of `targets` targets and `workflows` workflows (20-target routes), in JSON form. */
export const largeConfigJson = (targets: number, workflows: number) => ({
  targets: Array.from({ length: targets }, (_, i) => ({
    ref: `model://openai/m${i}@eu`,
    provider: "openai",
    model: `m${i}`,
    capabilities: {
      vision: false,
      tools: true,
      streaming: true,
      structuredOutput: { mode: "json_schema" },
      contextWindow: 128_000,
      maxOutputTokens: 4096
    },
    regions: ["eu"],
    dataClasses: ["public", "internal", "confidential"],
    pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6, currency: "USD", pricingVersion: "prices-1" },
    limits: { maxAttempts: 3, perAttemptTimeout: 400, minimumAttemptTime: 100 },
    status: "active"
  })),
  workflows: Array.from({ length: workflows }, (_, w) => ({
    name: `workflow.${w}`,
    policyVersion: "policy-1",
    prompt: { id: `workflow.${w}.prompt`, version: "1" },
    route: Array.from({ length: Math.min(20, targets) }, (_, k) => `model://openai/m${(w * 20 + k) % targets}@eu`),
    timeout: 1000,
    regions: ["eu"],
    dataClass: "internal"
  }))
})
