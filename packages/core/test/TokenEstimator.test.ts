import { assert, describe, it } from "@effect/vitest"
import * as Budgets from "@modelgate/core/Budgets"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import type { Message } from "@modelgate/core/ModelCommand"
import { TenantId, ToolDefinition } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { ModelTarget, Pricing } from "@modelgate/core/ModelTarget"
import * as TokenEstimator from "@modelgate/core/TokenEstimator"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import { Effect, Exit, Layer } from "effect"
import { countTokens } from "gpt-tokenizer"
import { command, servicesCounting, target, workflow, exclusionsOf } from "./fixtures.js"
import { driven, generateExit } from "./virtualTime.js"
import { maxPieceLength } from "../src/internal/tokenLimits.js"
import { imageTokens } from "../src/internal/tokenLimits.js"

describe("TokenEstimator", () => {
  it("counts with the o200k tokenizer, not characters / 4", () => {
    assert.strictEqual(TokenEstimator.countText(""), 0)
    // "hello" + " world": 2 tokens (length / 4 would say 3)
    assert.strictEqual(TokenEstimator.countText("hello world"), 2)
    assert.strictEqual(TokenEstimator.countText("hello world"), countTokens("hello world"))
  })

  it("special-token text in user input is ordinary text, never an exception", () => {
    assert.throws(() => countTokens("ignore <|endoftext|> this"))
    assert.strictEqual(
      TokenEstimator.countText("ignore <|endoftext|> this"),
      countTokens("ignore <|endoftext|> this", { disallowedSpecial: new Set() })
    )
  })

  it("long whitespace-free runs are counted in slices: near-exact, and linear in time", () => {
    const letters = "abcdefghijklmnopqrstuvwxyz"
    const run = Array.from({ length: 1_024 }, (_, i) => letters[(i * 7_919 + ((i * i) % 13)) % 26]).join("")
    const exact = countTokens(run)
    const sliced = TokenEstimator.countText(run)
    // at most one extra token per slice boundary, never fewer
    assert.isAtLeast(sliced, exact)
    assert.isAtMost(sliced, exact + Math.ceil(run.length / maxPieceLength))
    // text without long runs is counted exactly
    const prose = "Please refund the second charge on my March invoice. ".repeat(100)
    assert.strictEqual(TokenEstimator.countText(prose), countTokens(prose))
    // 256 KB of whitespace: unsliced, the quadratic merge would take minutes (64 KB took 9 s)
    assert.strictEqual(
      TokenEstimator.countText(" ".repeat(262_144)),
      Math.ceil(262_144 / maxPieceLength) * countTokens(" ".repeat(maxPieceLength))
    )
    // a surrogate pair on a slice boundary is not split
    const emoji = "😀".repeat(300)
    assert.isAtLeast(TokenEstimator.countText(emoji), countTokens(emoji))
  })

  it("memoizes short texts only in the cache it is given, which empties when full", () => {
    const cache = TokenEstimator.makeCache()
    const schema = { type: "object", properties: { answer: { type: "string" } } }
    const input = { messages: [{ _tag: "user", content: "hello world" } as const], outputJsonSchema: schema }
    assert.strictEqual(TokenEstimator.countText("hello world"), 2)
    assert.strictEqual(
      Effect.runSync(TokenEstimator.estimateInputYielding(input, cache)),
      TokenEstimator.estimateInput(input)
    )
    assert.strictEqual(cache.schemaLengths.get(schema), JSON.stringify(schema).length)
    assert.deepStrictEqual([...cache.texts.keys()], ["hello world", JSON.stringify(schema)])
    const long = "a ".repeat(4_096) // over the memo's 4,096 characters
    assert.strictEqual(TokenEstimator.countText(long, cache), countTokens(long))
    assert.isFalse(cache.texts.has(long))
    for (let i = cache.texts.size; i < 1_024; i++) TokenEstimator.countText(`text ${i}`, cache)
    assert.strictEqual(cache.texts.size, 1_024) // full
    assert.strictEqual(TokenEstimator.countText("one more", cache), 2)
    assert.deepStrictEqual([...cache.texts.entries()], [["one more", 2]])
  })

  it("estimates everything that is sent: messages, tool calls, images, tools and the output JSON Schema", () => {
    const system: Message = { _tag: "system", content: "You classify support tickets." }
    const user: Message = { _tag: "user", content: "My invoice is wrong" }
    const base = TokenEstimator.estimateInput({ messages: [system, user] })
    // 3 for the reply primer, 4 per message for role markers
    assert.strictEqual(
      base,
      3 + 4 + TokenEstimator.countText(system.content) + 4 + TokenEstimator.countText("My invoice is wrong")
    )
    const tool = new ToolDefinition({
      name: "lookup_invoice",
      description: "Finds an invoice by number",
      parameters: { type: "object", properties: { number: { type: "string" } }, required: ["number"] }
    })
    const withTool = TokenEstimator.estimateInput({ messages: [system, user], tools: [tool] })
    assert.strictEqual(
      withTool - base,
      TokenEstimator.countText(
        JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters })
      )
    )
    const schema = { type: "object", properties: { category: { enum: ["billing", "technical"] } } }
    assert.strictEqual(
      TokenEstimator.estimateInput({ messages: [system, user], outputJsonSchema: schema }) - base,
      TokenEstimator.countText(JSON.stringify(schema))
    )
    const image: Message = {
      _tag: "user",
      content: [
        { _tag: "text", text: "My invoice is wrong" },
        { _tag: "image", url: "https://example.com/invoice.png" }
      ]
    }
    assert.strictEqual(TokenEstimator.estimateInput({ messages: [system, image] }) - base, imageTokens)
    const call: Message = {
      _tag: "assistant",
      toolCalls: [{ id: "c1", name: "lookup_invoice", arguments: '{"number":"INV-1"}' }]
    }
    assert.strictEqual(
      TokenEstimator.estimateInput({ messages: [system, user, call] }) - base,
      4 + TokenEstimator.countText("lookup_invoice") + TokenEstimator.countText('{"number":"INV-1"}')
    )
  })
})

const P = "model://openai/small@eu"
const F = "model://anthropic/haiku@eu"
const limits = { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }
const priced = (t: ModelTarget, fields: Partial<ConstructorParameters<typeof ModelTarget>[0]> = {}) =>
  new ModelTarget({
    ...t,
    pricing: new Pricing({
      inputPerMillion: 1_000,
      outputPerMillion: 2_000,
      currency: "USD",
      pricingVersion: "prices-test-1"
    }),
    ...fields
  })

const layer = (targets: ReadonlyArray<ModelTarget>, scripts: ScriptedProvider.Scripts = {}) =>
  ModelGateway.layer({
    config: GatewayConfig.GatewayConfig.make({
      targets,
      workflows: [
        workflow({ name: "w.reply", route: [P, F], timeout: 10_000, maxOutputTokens: 100 }),
        workflow({ name: "w.capped", route: [P, F], timeout: 10_000, maxOutputTokens: 100, maxInputTokens: 10 })
      ]
    })
  }).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts })),
    Layer.provideMerge(servicesCounting(100))
  )

/** Runs `generate` for 1 s of virtual time: its exit. */
const run = (cmd: ReturnType<typeof command>) => driven(generateExit(cmd), 1_000)

describe("input-token limits and safety factors in the gateway", () => {
  const n = TokenEstimator.estimateInput({ messages: command("w.reply").messages })

  for (const [name, cmd] of [
    ["the workflow's maxInputTokens", command("w.capped")],
    ["the command's maxInputTokens", command("w.reply", { maxInputTokens: n - 1 })]
  ] as const) {
    it.effect(`input over ${name}: InvalidRequest before any provider call or reservation`, () =>
      Effect.gen(function* () {
        const exit = yield* run(cmd)
        const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.deepStrictEqual(
          [error?._tag, error?._tag === "InvalidRequest" ? error.reason : undefined],
          ["InvalidRequest", "input_too_large"]
        )
        assert.strictEqual((yield* (yield* ScriptedProvider.ScriptedProvider).attempts).length, 0)
        const balance = yield* Effect.flatMap(Budgets.Budgets, (b) => b.balance(TenantId.make("acme")))
        assert.deepStrictEqual([balance.committed, balance.reserved], [0, 0])
        const [record] = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
        assert.deepStrictEqual([record?.outcome, record?.errorTag], ["failed", "InvalidRequest"])
      }).pipe(
        Effect.provide(layer([priced(target(P, "openai", { limits })), priced(target(F, "anthropic", { limits }))]))
      )
    )
  }

  it.effect("exactly at the limit is allowed", () =>
    Effect.gen(function* () {
      assert.isTrue(Exit.isSuccess(yield* run(command("w.reply", { maxInputTokens: n }))))
    }).pipe(
      Effect.provide(layer([priced(target(P, "openai", { limits })), priced(target(F, "anthropic", { limits }))]))
    )
  )

  it.effect("a target's tokenizerSafetyFactor scales its input estimate: context check, reservation, cap", () =>
    Effect.gen(function* () {
      const g = yield* ModelGateway.ModelGateway
      const route = yield* g.router.resolve(command("w.reply"))
      assert.strictEqual(route.inputTokens, n)
      // P's window holds n tokens but not n × 1.5: excluded; F (factor 1, same window) is eligible
      assert.deepStrictEqual(exclusionsOf(route.decision), [[P, "CONTEXT_TOO_SMALL"]])
      assert.deepStrictEqual(route.decision.eligible.map(String), [F])
    }).pipe(
      Effect.provide(
        layer([
          priced(target(P, "openai", { limits, contextWindow: n + 2 }), { tokenizerSafetyFactor: 1.5 }),
          priced(target(F, "anthropic", { limits, contextWindow: n + 2 }))
        ])
      )
    )
  )

  it.effect("the reservation covers the worst case with the safety factor applied", () =>
    Effect.gen(function* () {
      const exit = yield* run(command("w.reply"))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const cost = exit.value.evidence.cost
        // worst case over both targets: P's input is ceil(n × 1.5), F's is n
        const expected = (Math.ceil(n * 1.5) * 1_000 + 100 * 2_000) / 1e6
        assert.strictEqual(Math.round(cost.reserved * 1e9), Math.round(expected * 1e9))
        assert.strictEqual(exit.value.evidence.pricingVersion, "prices-test-1")
      }
    }).pipe(
      Effect.provide(
        layer([
          priced(target(P, "openai", { limits }), { tokenizerSafetyFactor: 1.5 }),
          priced(target(F, "anthropic", { limits }))
        ])
      )
    )
  )
})
