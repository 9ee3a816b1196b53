/**
 * The mock speaks the wire the real APIs send: a mock stream and a corpus recording of the same
 * kind (text, a tool call) have the same event kinds in the same order, once repeated deltas are
 * folded into one and keep-alives (`ping`, comments) dropped.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { Provider } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Effect } from "effect"
import { TestLayer } from "../adapters-fixtures.js"
import type { Recording } from "./replay.js"
import { loadCorpus } from "./replay.js"

/** The JSON payloads of an SSE body with their event names. */
const frames = (body: string): ReadonlyArray<{ readonly event: string; readonly data: unknown }> =>
  body
    .split(/\r?\n\r?\n/)
    .map((block) => {
      const lines = block.split(/\r?\n/)
      const event =
        lines
          .find((l) => l.startsWith("event:"))
          ?.slice(6)
          .trim() ?? "message"
      const data = lines
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trim())
        .join("\n")
      return { event, data }
    })
    .filter((frame) => frame.data !== "" && frame.event !== "ping")
    .map((frame) => ({ event: frame.event, data: frame.data === "[DONE]" ? "[DONE]" : JSON.parse(frame.data) }))

const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value)) : {}

/** The kinds of one frame, per wire format (Gemini: one per part, as its chunking is arbitrary). */
const kindsOf = (provider: Provider, data: unknown): ReadonlyArray<string> => {
  if (data === "[DONE]") return ["[DONE]"]
  if (provider === "gemini") return geminiKinds(data)
  return [kindOf(provider, data)]
}

const geminiKinds = (data: unknown): ReadonlyArray<string> => {
  const candidates = record(data).candidates
  const candidate = record(Array.isArray(candidates) ? candidates[0] : undefined)
  const parts = record(candidate.content).parts
  const kinds = (Array.isArray(parts) ? parts : []).flatMap((p) => {
    const part = record(p)
    if ("functionCall" in part) return ["functionCall"]
    return part.thought === true || part.text === "" ? [] : ["text"]
  })
  return [...kinds, ...(candidate.finishReason ? ["finish"] : [])]
}

/** The kind of one frame of the other formats. */
const kindOf = (provider: Provider, data: unknown): string => {
  const o = record(data)
  switch (provider) {
    case "openai-responses":
      return String(o.type)
    case "anthropic": {
      const block = record(o.content_block)
      const delta = record(o.delta)
      if (o.type === "content_block_start") return `content_block_start:${String(block.type)}`
      if (o.type === "content_block_delta") return `content_block_delta:${String(delta.type)}`
      return String(o.type)
    }
    default: {
      const choice = record((Array.isArray(o.choices) ? o.choices : [])[0])
      const delta = record(choice.delta)
      if (choice.finish_reason) return "finish"
      if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) return "tool_calls"
      if (typeof delta.content === "string" && delta.content !== "") return "content"
      if (o.usage && !Array.isArray(o.choices)) return "usage"
      if (Array.isArray(o.choices) && o.choices.length === 0) return "usage"
      return "role"
    }
  }
}

/** Kinds in order, consecutive repeats folded. */
const shape = (provider: Provider, body: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const frame of frames(body)) {
    for (const kind of kindsOf(provider, frame.data)) if (out[out.length - 1] !== kind) out.push(kind)
  }
  return out
}

const corpus = loadCorpus()
const recording = (family: string, name: string): Recording => {
  const found = corpus.find((r) => r.family === family && r.name === name)
  if (found === undefined) throw new Error(`no recording ${family}/${name}`)
  return found
}

/** A streamed mock answer's raw body, for the provider's own streaming request. */
const mockStream = (provider: Provider, model: string, kind: Kind) =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer
    yield* mock.enqueue(
      MockProviderServer.success({
        text: kind === "tool" ? "" : "Hello from the mock, in pieces.",
        ...(kind === "text" ? {} : { toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "x" } }] }),
        chunkSize: 4
      }),
      { provider, model }
    )
    const base = mock.baseUrl(provider)
    const [url, body] =
      provider === "anthropic"
        ? [`${base}/messages`, { model, max_tokens: 50, stream: true, messages: [{ role: "user", content: "hi" }] }]
        : provider === "gemini"
          ? [
              `${base}/models/${model}:streamGenerateContent?alt=sse`,
              { contents: [{ role: "user", parts: [{ text: "hi" }] }] }
            ]
          : provider === "openai-responses"
            ? [`${base}/responses`, { model, input: "hi", stream: true }]
            : [
                `${base}/chat/completions`,
                {
                  model,
                  stream: true,
                  stream_options: { include_usage: true },
                  messages: [{ role: "user", content: "hi" }]
                }
              ]
    return yield* Effect.promise(() =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
        (r) => r.text()
      )
    )
  })

/** A scripted answer: text, a tool call, or text then a tool call. */
type Kind = "text" | "tool" | "textTool"

/** Mock stream kind → the corpus recordings of real traffic it must look like. */
const pairs: ReadonlyArray<{
  readonly provider: Provider
  readonly kind: Kind
  readonly family: string
  readonly names: ReadonlyArray<string>
}> = [
  { provider: "openai", kind: "text", family: "openai-chat", names: ["text-stream"] },
  { provider: "openai", kind: "tool", family: "openai-chat", names: ["parallel-tools-stream"] },
  {
    provider: "openai-responses",
    kind: "text",
    family: "openai-responses",
    names: ["azure-text-stream", "text-stream-docs"]
  },
  { provider: "openai-responses", kind: "tool", family: "openai-responses", names: ["azure-tool-call-stream"] },
  { provider: "anthropic", kind: "text", family: "anthropic", names: ["text-stream", "sdk-basic-stream"] },
  {
    provider: "anthropic",
    kind: "textTool",
    family: "anthropic",
    names: ["json-tool-2-stream", "sdk-tool-use-stream"]
  },
  { provider: "gemini", kind: "text", family: "gemini", names: ["text-stream"] },
  { provider: "gemini", kind: "tool", family: "gemini", names: ["tool-call-stream", "tool-call-gemini3-stream"] }
]

describe("the mock's streams against real recordings", () => {
  layer(TestLayer, { excludeTestServices: true })((it) => {
    for (const pair of pairs) {
      it.effect(`${pair.provider} ${pair.kind}: same event kinds in the same order`, () =>
        Effect.gen(function* () {
          const mock = shape(pair.provider, yield* mockStream(pair.provider, `shape-${pair.kind}`, pair.kind))
          for (const name of pair.names) {
            const real = shape(pair.provider, recording(pair.family, name).body.toString("utf8"))
            assert.deepStrictEqual(mock, real, `${pair.family}/${name}`)
          }
        })
      )
    }
  })
})
