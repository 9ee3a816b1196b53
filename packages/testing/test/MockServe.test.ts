/**
 * The mock as a process any client can use (`MockServe`, behind the `modelgate-mock` bin): its
 * flags, its JSON scripts, its banner (base URL first) and the faults it serves.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Option, Ref } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { MockProviderServer as FromRoot, MockScript, MockServe } from "../src/index.js"
import { MockProviderServer } from "../src/MockProviderServer.js"

const post = (url: string, body: unknown) =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    client.execute(HttpClientRequest.post(url).pipe(HttpClientRequest.bodyUnsafeJson(body)))
  ).pipe(
    Effect.flatMap((r) => Effect.map(r.text, (text) => ({ status: r.status, headers: r.headers, text }))),
    Effect.scoped
  )

/** Starts the mock with `options`; returns the banner lines printed and the OpenAI base URL. */
const started = (options: MockServe.Options) =>
  Effect.gen(function* () {
    const lines = yield* Ref.make<ReadonlyArray<string>>([])
    yield* MockServe.start(options, (line) => Ref.update(lines, (all) => [...all, line]))
    const printed = yield* Ref.get(lines)
    return { printed, openai: printed[0] ?? "" }
  })

describe("MockServe", () => {
  it("one import shape: the package root and the module give the same MockProviderServer", () => {
    assert.strictEqual(FromRoot, MockProviderServer)
    assert.strictEqual(FromRoot.layer, MockProviderServer.layer)
    const behavior: FromRoot.Behavior = FromRoot.failure(503)
    assert.strictEqual(behavior._tag, "Failure")
  })

  it.effect("flags parse into options; bad values and --help", () =>
    Effect.gen(function* () {
      const parsed = yield* MockServe.parse(["--port", "4010", "--fail", "503", "--times", "2", "--retry-after", "1"])
      assert.deepStrictEqual(Option.getOrUndefined(parsed), { port: 4010, fail: 503, times: 2, retryAfter: 1 })
      assert.isTrue(Option.isNone(yield* MockServe.parse(["--help"])))
      const bad = yield* Effect.flip(MockServe.parse(["--fail", "200", "--port", "x"]))
      assert.include(bad, "--port must be an integer from 0 to 65535")
      assert.include(bad, "--fail must be an integer from 400 to 599")
      assert.include(bad, "usage: modelgate-mock")
      assert.include(yield* Effect.flip(MockServe.parse(["--nope"])), "usage: modelgate-mock")
    })
  )

  it("flags over a script: a fault for every request, or the first N ahead of a success", () => {
    assert.deepStrictEqual(MockScript.withFlags({ queues: [] }, { fail: 503 }), {
      queues: [],
      default: { _tag: "Failure", status: 503 }
    })
    const script = MockScript.withFlags({ queues: [] }, { fail: 429, times: 2, retryAfter: 1, text: "ok" })
    assert.deepStrictEqual(script.default, { _tag: "Success", text: "ok" })
    assert.deepStrictEqual(script.queues, [
      { behaviors: [0, 1].map(() => FromRoot.failure(429, { headers: { "retry-after": "1" } })) }
    ])
  })

  it.effect("a script file with an unknown or mistyped field is refused with its path", () =>
    Effect.gen(function* () {
      const problem = yield* Effect.flip(
        MockScript.decode({ queues: [{ provider: "openai", behaviors: [{ _tag: "Failure", status: "429" }] }], x: 1 })
      )
      assert.include(problem, "invalid mock script")
      assert.include(problem, '["status"]')
      assert.include(problem, '"x"')
      const raw = yield* Effect.either(MockScript.decode({ default: { _tag: "Raw", status: 200, body: "{}" } }))
      assert.isTrue(Either.isRight(raw))
    })
  )

  it.scoped("serves: banner with the OpenAI base URL first, script queues per provider, then the default", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "mock-script-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "script.json")
      writeFileSync(
        file,
        JSON.stringify({
          default: { _tag: "Success", text: "scripted default" },
          queues: [{ provider: "anthropic", behaviors: [{ _tag: "Failure", status: 529 }] }]
        })
      )
      const { printed, openai } = yield* started({ script: file })
      const root = openai.replace(/\/v1$/, "")
      assert.match(openai, /^http:\/\/127\.0\.0\.1:\d+\/v1$/)
      assert.deepStrictEqual(printed.slice(1), [
        `OPENAI_BASE_URL=${openai}`,
        `ANTHROPIC_BASE_URL=${root}`,
        `GOOGLE_GEMINI_BASE_URL=${root}`,
        `OPENAI_COMPATIBLE_BASE_URL=${root}/compat/v1`
      ])
      const anthropic = { model: "claude-haiku-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }
      assert.strictEqual((yield* post(`${root}/v1/messages`, anthropic)).status, 529)
      const second = yield* post(`${root}/v1/messages`, anthropic)
      assert.strictEqual(second.status, 200)
      assert.include(second.text, "scripted default")
      const chat = yield* post(`${openai}/chat/completions`, { model: "m", messages: [] })
      assert.strictEqual(JSON.parse(chat.text).choices[0].message.content, "scripted default")
      const gemini = yield* post(`${root}/v1beta/models/gemini-2.5-flash:generateContent`, { contents: [] })
      assert.include(gemini.text, "scripted default")
      const responses = yield* post(`${openai}/responses`, { model: "m", input: "hi" })
      assert.include(responses.text, "scripted default")
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.scoped("serves flag faults: the first N requests fail with retry-after, then success", () =>
    Effect.gen(function* () {
      const { openai } = yield* started({ fail: 429, times: 1, retryAfter: 2 })
      const first = yield* post(`${openai}/chat/completions`, { model: "m", messages: [] })
      assert.strictEqual(first.status, 429)
      assert.strictEqual(first.headers["retry-after"], "2")
      assert.strictEqual((yield* post(`${openai}/chat/completions`, { model: "m", messages: [] })).status, 200)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )

  it.effect("an unreadable or non-JSON script is a problem, not a crash", () =>
    Effect.gen(function* () {
      assert.include(yield* Effect.flip(MockServe.scriptOf({ script: "/nonexistent/mock.json" })), "cannot read")
    })
  )
})
