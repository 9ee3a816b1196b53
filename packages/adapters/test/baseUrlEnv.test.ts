/**
 * The adapters' default configuration reads the official SDKs' environment variables the way the
 * SDKs read them: `OPENAI_BASE_URL` with its `/v1`, `ANTHROPIC_BASE_URL` and
 * `GOOGLE_GEMINI_BASE_URL` as server roots (the version appended), and `GOOGLE_API_KEY` before
 * `GEMINI_API_KEY`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import { Config, ConfigProvider, Effect, Redacted } from "effect"

const read = <A>(config: Config.Config.Wrap<A>, env: Record<string, string>) =>
  Effect.withConfigProvider(Config.unwrap(config), ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("base URLs and keys from the environment", () => {
  it.effect("OpenAI: OPENAI_BASE_URL as given (it includes /v1), else api.openai.com/v1", () =>
    Effect.gen(function* () {
      const set = yield* read(OpenAi.defaultConfig, {
        OPENAI_BASE_URL: "http://127.0.0.1:4010/v1",
        OPENAI_API_KEY: "k"
      })
      assert.strictEqual(set.baseUrl, "http://127.0.0.1:4010/v1")
      assert.strictEqual(Redacted.value(set.apiKey!), "k")
      const unset = yield* read(OpenAi.defaultConfig, { OPENAI_API_KEY: "k" })
      assert.strictEqual(unset.baseUrl, "https://api.openai.com/v1")
    })
  )

  it.effect("Anthropic: ANTHROPIC_BASE_URL is the root, /v1 appended (kept when already there)", () =>
    Effect.gen(function* () {
      const url = (env: Record<string, string>) =>
        Effect.map(read(Anthropic.defaultConfig, { ...env, ANTHROPIC_API_KEY: "k" }), (c) => c.baseUrl)
      assert.strictEqual(yield* url({ ANTHROPIC_BASE_URL: "http://127.0.0.1:4010" }), "http://127.0.0.1:4010/v1")
      assert.strictEqual(yield* url({ ANTHROPIC_BASE_URL: "http://127.0.0.1:4010/" }), "http://127.0.0.1:4010/v1")
      assert.strictEqual(
        yield* url({ ANTHROPIC_BASE_URL: "http://proxy.test/anthropic/v1" }),
        "http://proxy.test/anthropic/v1"
      )
      assert.strictEqual(yield* url({}), "https://api.anthropic.com/v1")
    })
  )

  it.effect("Gemini: GOOGLE_GEMINI_BASE_URL is the root (/v1beta appended), else GEMINI_BASE_URL, else Google's", () =>
    Effect.gen(function* () {
      const url = (env: Record<string, string>) =>
        Effect.map(read(Gemini.defaultConfig, { ...env, GEMINI_API_KEY: "k" }), (c) => c.baseUrl)
      assert.strictEqual(
        yield* url({ GOOGLE_GEMINI_BASE_URL: "http://127.0.0.1:4010/" }),
        "http://127.0.0.1:4010/v1beta"
      )
      assert.strictEqual(
        yield* url({ GEMINI_BASE_URL: "http://proxy.test/gemini/v1beta" }),
        "http://proxy.test/gemini/v1beta"
      )
      assert.strictEqual(
        yield* url({ GOOGLE_GEMINI_BASE_URL: "http://a.test", GEMINI_BASE_URL: "http://b.test/v1beta" }),
        "http://a.test/v1beta"
      )
      assert.strictEqual(yield* url({}), "https://generativelanguage.googleapis.com/v1beta")
    })
  )

  it.effect("Gemini: GOOGLE_API_KEY before GEMINI_API_KEY, as @google/genai", () =>
    Effect.gen(function* () {
      const key = (env: Record<string, string>) =>
        Effect.map(read(Gemini.defaultConfig, env), (c) =>
          c.apiKey === undefined ? undefined : Redacted.value(c.apiKey)
        )
      assert.strictEqual(yield* key({ GOOGLE_API_KEY: "g", GEMINI_API_KEY: "m" }), "g")
      assert.strictEqual(yield* key({ GEMINI_API_KEY: "m" }), "m")
      const missing = yield* Effect.either(read(Gemini.defaultConfig, {}))
      assert.isTrue(missing._tag === "Left")
    })
  )
})
