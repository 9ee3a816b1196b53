/**
 * Audio and file inputs: the request contract (decoding, value-free errors), eligibility with its
 * own reason (`MEDIA_UNSUPPORTED`, the same in the router and at startup), audio input priced from
 * the catalogue's audio price and shown in the evidence's cost, and bounded token estimates.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import { Usage } from "@modelgate/core/ModelResult"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { costOf } from "@modelgate/core/Pricing"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { estimateInput } from "@modelgate/core/TokenEstimator"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Either, Exit, Layer, Schema, Stream } from "effect"
import { definition, gatewayLayer, providers, refs, targets, workflow, workflows } from "./fixtures.js"

const audio = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
const pdf = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoK"

const commandWith = (parts: ReadonlyArray<unknown>, workflowName = "ticket.reply") =>
  ModelCommand.decodeUnknown({
    workflow: workflowName,
    tenant: "acme",
    messages: [{ _tag: "user", content: [{ _tag: "text", text: "Here it is." }, ...parts] }]
  })

/** `t` with `capabilities` and `pricing` fields replaced. */
const withCaps = (
  t: ModelTarget,
  caps: Record<string, unknown>,
  pricing: Record<string, unknown> = {}
): ModelTarget => {
  const encoded = Schema.encodeSync(ModelTarget)(t)
  return Schema.decodeSync(ModelTarget)({
    ...encoded,
    capabilities: { ...encoded.capabilities, ...caps },
    pricing: { ...encoded.pricing, ...pricing }
  })
}

// The primary (openai) hears wav and mp3 and reads PDFs; the fallback (anthropic) reads PDFs only.
const mediaTargets = targets.map((t) =>
  t.ref === refs.primary
    ? withCaps(t, { audioInput: ["wav", "mp3"], fileInput: ["application/pdf"] }, { audioInputPerMillion: 40 })
    : t.ref === refs.fallback
      ? withCaps(t, { fileInput: ["application/pdf"] })
      : t
)
const mediaDefinition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({ targets: mediaTargets, workflows }),
  schemas: definition.schemas
}

const decisionFor = (parts: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const command = yield* commandWith(parts)
    return yield* Effect.either(gateway.router.resolve(command, "generate"))
  })

describe("media in the request contract", () => {
  it.effect("audio and file parts decode; bad ones fail naming the path, never the value", () =>
    Effect.gen(function* () {
      const ok = yield* commandWith([
        { _tag: "audio", data: audio, format: "mp3" },
        { _tag: "file", data: pdf, mediaType: "application/pdf", filename: "report.pdf" }
      ])
      const [message] = ok.messages
      assert.deepStrictEqual(
        message?._tag === "user" && typeof message.content !== "string" && message.content.map((p) => p._tag),
        ["text", "audio", "file"]
      )
      const secret = "sk-live-NOT-BASE64!!"
      const bad = yield* Effect.flip(commandWith([{ _tag: "audio", data: secret, format: "wav" }]))
      assert.include(bad.message, "content")
      assert.notInclude(bad.message, secret)
      const format = yield* Effect.flip(commandWith([{ _tag: "audio", data: audio, format: "midi" }]))
      assert.notInclude(format.message, "midi")
      const mediaType = yield* Effect.flip(commandWith([{ _tag: "file", data: pdf, mediaType: "pdf" }]))
      assert.include(mediaType.message, "invalid command")
    })
  )
})

describe("media eligibility", () => {
  it.effect("a target that does not accept the audio format or file type is excluded as MEDIA_UNSUPPORTED", () =>
    Effect.gen(function* () {
      const wav = yield* decisionFor([{ _tag: "audio", data: audio, format: "wav" }])
      assert.isTrue(Either.isRight(wav))
      if (Either.isRight(wav)) {
        assert.deepStrictEqual(wav.right.decision.eligible.map(String), [refs.primary])
        assert.deepStrictEqual(
          wav.right.decision.excluded.map((e) => [String(e.target), e.reason, e.detail]),
          [[refs.fallback, "MEDIA_UNSUPPORTED", "does not accept audio input (wav)"]]
        )
      }
      const file = yield* decisionFor([{ _tag: "file", data: pdf, mediaType: "application/pdf" }])
      assert.deepStrictEqual(Either.isRight(file) && file.right.decision.eligible.map(String), [
        refs.primary,
        refs.fallback
      ])
      // Neither hears flac nor reads CSV: nothing is eligible, each with its reason.
      const none = yield* decisionFor([
        { _tag: "audio", data: audio, format: "flac" },
        { _tag: "file", data: pdf, mediaType: "text/csv" }
      ])
      assert.isTrue(Either.isLeft(none))
      if (Either.isLeft(none) && none.left._tag === "NoEligibleRoute") {
        assert.deepStrictEqual(
          none.left.excluded.map((e) => [String(e.target), e.reason, e.detail]),
          [
            [refs.primary, "MEDIA_UNSUPPORTED", "does not accept audio input (flac), file input (text/csv)"],
            [refs.fallback, "MEDIA_UNSUPPORTED", "does not accept audio input (flac), file input (text/csv)"]
          ]
        )
      } else assert.fail("expected NoEligibleRoute")
    }).pipe(Effect.provide(gatewayLayer({}, mediaDefinition)))
  )

  it.effect("startup: a workflow requiring an audio format fails validation with the same reason", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.provide(
          ModelGateway.ModelGateway,
          gatewayLayer(
            {},
            {
              ...mediaDefinition,
              config: GatewayConfig.GatewayConfig.make({
                targets: mediaTargets,
                workflows: [workflow({ name: "call.transcribe", requires: { audioInput: ["wav"] } })]
              })
            }
          )
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "GatewayConfigError") {
        const problems = exit.cause.error.problems.map((p) => [p.path, p.reason, p.target, p.detail])
        assert.deepStrictEqual(problems, [
          ["workflows[0].route[1]", "MEDIA_UNSUPPORTED", refs.fallback, "does not accept audio input (wav)"]
        ])
      } else assert.fail("expected a GatewayConfigError")
    })
  )
})

describe("audio billing", () => {
  const primary = mediaTargets.find((t) => t.ref === refs.primary)!
  const reported = new Usage({ inputTokens: 1_000, outputTokens: 100, audioInputTokens: 800 })
  const answering = Layer.succeed(ProviderAdapter.tag("openai"), {
    provider: "openai",
    generate: () =>
      Effect.succeed({
        text: "transcript",
        toolCalls: [],
        finishReason: "stop" as const,
        refusal: false,
        usage: reported,
        modelVersion: "small",
        requestId: "req-1",
        httpStatus: 200
      }),
    stream: () => Stream.die("not used: these tests generate")
  })
  const layer = ModelGateway.layer(mediaDefinition).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        answering,
        ScriptedProvider.layer({ providers: providers.filter((p) => p !== "openai"), scripts: {} })
      )
    ),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
    )
  )

  it("audio input tokens at the audio price, the rest of the input at the input price", () => {
    // 200 text tokens at $0.40/M, 800 audio tokens at $40/M, 100 output at $1.60/M.
    assert.strictEqual(costOf(primary, reported), (200 * 400 + 800 * 40_000 + 100 * 1_600) / 1e9)
    // Without an audio price, audio tokens are input tokens.
    const fallback = mediaTargets.find((t) => t.ref === refs.fallback)!
    assert.strictEqual(
      costOf(fallback, reported),
      costOf(fallback, new Usage({ inputTokens: 1_000, outputTokens: 100 }))
    )
  })

  it.effect("the evidence shows the audio tokens and their cost", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const result = yield* gateway.generate(yield* commandWith([{ _tag: "audio", data: audio, format: "wav" }]))
      const evidence = result.evidence
      assert.strictEqual(evidence.usage.audioInputTokens, 800)
      // 800 audio tokens at $40/M; with 200 text tokens at $0.40/M and 100 output at $1.60/M.
      assert.strictEqual(evidence.cost.audioInput, 0.032)
      assert.strictEqual(evidence.cost.actual, 0.03224)
      const [attempt] = evidence.attempts
      assert.strictEqual(attempt?.usage?.audioInputTokens, 800)
    }).pipe(Effect.provide(layer))
  )
})

describe("media token estimates", () => {
  const estimateWith = (parts: ReadonlyArray<unknown>) =>
    Effect.map(commandWith(parts), (command) => estimateInput({ messages: command.messages }))

  it.effect("audio: a token per 500 decoded bytes; a file: a token per 16 bytes, at least 1,000", () =>
    Effect.gen(function* () {
      const base = yield* estimateWith([])
      const data = (chars: number) => "A".repeat(chars)
      // 4,000 base64 characters are 3,000 bytes.
      assert.strictEqual((yield* estimateWith([{ _tag: "audio", data: data(4_000), format: "wav" }])) - base, 6)
      assert.strictEqual(
        (yield* estimateWith([{ _tag: "file", data: data(4_000), mediaType: "application/pdf" }])) - base,
        1_000
      )
      // 2,000,000 characters: 1,500,000 bytes.
      assert.strictEqual(
        (yield* estimateWith([{ _tag: "file", data: data(2_000_000), mediaType: "application/pdf" }])) - base,
        93_750
      )
      assert.strictEqual((yield* estimateWith([{ _tag: "audio", data: data(2_000_000), format: "mp3" }])) - base, 3_000)
    })
  )
})
