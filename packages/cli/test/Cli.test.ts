/**
 * The `modelgate` commands, run in-process on the demo's configuration file
 * (`examples/support-ticket/gateway.json`) and on broken ones: `check` lists every startup problem
 * with its fix, `explain` prints the route decision without calling a provider, `mock` serves the
 * mock provider and prints its base URL first.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeContext, NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cli } from "@modelgate/cli"
import { RouteDecision } from "@modelgate/core"
import { Effect, Exit, Fiber, Queue, Schema } from "effect"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const demo = fileURLToPath(new URL("../../../examples/support-ticket/gateway.json", import.meta.url))
const demoRequest = fileURLToPath(new URL("../../../examples/support-ticket/request.json", import.meta.url))
const demoJson = (): Record<string, unknown> => JSON.parse(readFileSync(demo, "utf8"))

/** Runs `modelgate …args` in-process; returns what it printed and how it ended. */
const modelgate = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const exit = yield* Cli.run(["node", "modelgate", ...args]).pipe(
      Effect.provideService(Cli.Output, { line: (text) => Effect.sync(() => void lines.push(text)) }),
      Effect.provide(NodeContext.layer),
      Effect.exit
    )
    const code = Exit.isSuccess(exit)
      ? 0
      : exit.cause._tag === "Fail" && exit.cause.error._tag === "ExitCode"
        ? exit.cause.error.code
        : -1
    return { lines, text: lines.join("\n"), code }
  })

/** Writes `files` into a fresh directory; removed when the test's scope closes. */
const files = (contents: Record<string, unknown>) =>
  Effect.gen(function* () {
    const dir = mkdtempSync(join(tmpdir(), "modelgate-cli-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    return Object.fromEntries(
      Object.entries(contents).map(([name, value]) => {
        const path = join(dir, name)
        writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value))
        return [name, path]
      })
    )
  })

describe("modelgate check", () => {
  it.effect("the demo's configuration starts", () =>
    Effect.gen(function* () {
      const { lines, code } = yield* modelgate("check", demo)
      assert.strictEqual(code, 0)
      assert.deepStrictEqual(lines, [
        `${demo}: ok (7 targets, 4 workflows): the gateway starts with this configuration`
      ])
    })
  )

  it.scoped("lists every problem with its path, reason and fix, and exits 1", () =>
    Effect.gen(function* () {
      const json = demoJson()
      const workflows = json.workflows as ReadonlyArray<Record<string, unknown>>
      const broken = {
        ...json,
        // No adapter named for vllm-eu, no JSON Schema for TicketFields, no degrade handlers.
        adapters: {},
        schemas: { Classification: (json.schemas as Record<string, unknown>).Classification },
        degradeHandlers: [],
        workflows: [
          { ...workflows[0], route: ["model://openai/gpt-4.1-mini@eu", "model://nowhere"] },
          ...workflows.slice(1)
        ]
      }
      const { config } = yield* files({ config: broken })
      const { lines, text, code } = yield* modelgate("check", config!)
      assert.strictEqual(code, 1)
      assert.match(lines[0]!, /: \d+ problems; the gateway would not start:$/)
      for (const reason of ["UNKNOWN_TARGET", "NO_ADAPTER", "UNKNOWN_SCHEMA", "UNKNOWN_DEGRADE_HANDLER"]) {
        assert.include(text, reason)
      }
      assert.include(text, "workflows[0].route[1]")
      assert.include(text, 'fix: name the adapter serving this provider under "adapters"')
      assert.include(text, 'fix: give the schema\'s JSON Schema under "schemas"')
      assert.include(text, 'fix: list the handler\'s name under "degradeHandlers"')
    })
  )

  it.scoped("decode problems of the gateway's fields and of the file's own, all at once", () =>
    Effect.gen(function* () {
      const { config, notJson } = yield* files({
        config: { targets: [{ ref: "x", catalogue: "openai/gpt-9" }], workflows: "no", adapters: { x: "azure" } },
        notJson: "{ targets"
      })
      const decoded = yield* modelgate("check", config!)
      assert.strictEqual(decoded.code, 1)
      assert.include(decoded.text, "UNKNOWN_CATALOGUE_ENTRY")
      assert.include(decoded.text, "workflows")
      assert.include(decoded.text, "INVALID_CLI_FIELD")
      const unparsable = yield* modelgate("check", notJson!)
      assert.strictEqual(unparsable.code, 1)
      assert.include(unparsable.text, "NOT_JSON")
    })
  )

  it.effect("a missing file is a usage error", () =>
    Effect.gen(function* () {
      const { code } = yield* modelgate("check", "/nonexistent/gateway.json")
      assert.notStrictEqual(code, 0)
    })
  )
})

describe("modelgate explain", () => {
  it.effect("the demo's classify request: selected, fallback order, exclusions with reasons, requirements", () =>
    Effect.gen(function* () {
      const { lines, code } = yield* modelgate("explain", demo, demoRequest)
      assert.strictEqual(code, 0)
      assert.deepStrictEqual(lines.slice(1, 4), [
        "selected   model://openai/gpt-4.1-mini@eu (PINNED_ORDER)",
        "eligible   1. model://openai/gpt-4.1-mini@eu  2. model://anthropic/claude-haiku-4-5@eu",
        "fallback   model://anthropic/claude-haiku-4-5@eu"
      ])
      assert.match(lines[0]!, /^workflow {3}ticket\.classify \(policy classify-policy-4\), decision route-[0-9a-f]{8}$/)
      assert.strictEqual(lines[4], "excluded")
      assert.match(
        lines[5]!,
        /^ {2}model:\/\/gemini\/gemini-2\.5-flash@us +DATA_REGION_MISMATCH +runs in \[us\], allowed \[eu\]$/
      )
      assert.include(lines[6]!, "required   regions [eu], data class internal, risk LOW, needs structuredOutput")
    })
  )

  it.effect("--json prints the RouteDecision", () =>
    Effect.gen(function* () {
      const { text, code } = yield* modelgate("explain", "--json", demo, demoRequest)
      assert.strictEqual(code, 0)
      const decision = Schema.decodeUnknownSync(RouteDecision.RouteDecision)(JSON.parse(text))
      assert.strictEqual(decision.selected, "model://openai/gpt-4.1-mini@eu")
      assert.deepStrictEqual(
        decision.excluded.map((e) => [e.target, e.reason]),
        [["model://gemini/gemini-2.5-flash@us", "DATA_REGION_MISMATCH"]]
      )
    })
  )

  it.effect("--stream decides as for ModelGateway.stream: streaming is required", () =>
    Effect.gen(function* () {
      const { lines, code } = yield* modelgate("explain", "--stream", demo, demoRequest)
      assert.strictEqual(code, 0)
      assert.include(lines.find((l) => l.startsWith("required")) ?? "", "needs streaming")
    })
  )

  it.scoped("a request the policy refuses: the refusal and every excluded target, exit 1", () =>
    Effect.gen(function* () {
      const { request, invalid } = yield* files({
        request: {
          // Confidential data: none of the draft's routes may receive it.
          workflow: "ticket.draftReply",
          tenant: "acme",
          dataClass: "confidential",
          messages: [{ _tag: "user", content: "hi" }]
        },
        invalid: { workflow: "ticket.classify", messages: [] }
      })
      const refused = yield* modelgate("explain", demo, request!)
      assert.strictEqual(refused.code, 1)
      assert.match(refused.lines[0]!, /^refused {4}(PolicyViolation|NoEligibleRoute): /)
      assert.strictEqual(refused.lines[1], "excluded")
      assert.strictEqual(refused.lines.filter((l) => /^ {2}model:\/\/\S+ +DATA_CLASS_NOT_ALLOWED/.test(l)).length, 3)
      const bad = yield* modelgate("explain", demo, invalid!)
      assert.strictEqual(bad.code, 1)
      assert.include(bad.text, "tenant")
    })
  )

  it.scoped("scored selection: the scores of every target that passed the filters", () =>
    Effect.gen(function* () {
      const region = { regions: ["eu"], dataClasses: ["internal"] }
      const { config, request } = yield* files({
        config: {
          targets: [
            { ref: "mini", catalogue: "openai/gpt-4.1-mini", ...region },
            { ref: "haiku", catalogue: "anthropic/claude-haiku-4-5", ...region }
          ],
          workflows: [
            {
              name: "reply",
              policyVersion: "1",
              prompt: { id: "reply", version: "1" },
              route: ["mini", "haiku"],
              selection: "scored",
              timeout: 5000,
              regions: ["eu"],
              dataClass: "internal"
            }
          ]
        },
        request: { workflow: "reply", tenant: "acme", messages: [{ _tag: "user", content: "hi" }] }
      })
      const { lines, code } = yield* modelgate("explain", config!, request!)
      assert.strictEqual(code, 0)
      const header = lines.findIndex((l) => l.startsWith("scores "))
      assert.isAtLeast(header, 0)
      assert.match(lines[header + 1]!, /^ {2}(mini|haiku) +\d\.\d{4}/)
      assert.match(lines[header + 2]!, /^ {2}(mini|haiku) +\d\.\d{4}/)
      assert.match(lines[1]!, /^selected {3}(mini|haiku) \((BEST_SCORE)\)$/)
    })
  )
})

describe("modelgate mock", () => {
  it.live("serves the mock and prints OPENAI_BASE_URL first; flags script faults", () =>
    Effect.gen(function* () {
      const printed = yield* Queue.unbounded<string>()
      const server = yield* Cli.run(["node", "modelgate", "mock", "--fail", "503", "--times", "1"]).pipe(
        Effect.provideService(Cli.Output, { line: (text) => Queue.offer(printed, text) }),
        Effect.provide(NodeContext.layer),
        Effect.fork
      )
      const baseUrl = yield* Queue.take(printed)
      assert.match(baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v1$/)
      assert.strictEqual(yield* Queue.take(printed), `OPENAI_BASE_URL=${baseUrl}`)
      const status = Effect.flatMap(HttpClient.HttpClient, (client) =>
        client.execute(
          HttpClientRequest.post(`${baseUrl}/chat/completions`).pipe(
            HttpClientRequest.bodyUnsafeJson({ model: "m", messages: [] })
          )
        )
      ).pipe(
        Effect.map((r) => r.status),
        Effect.scoped,
        Effect.provide(NodeHttpClient.layerUndici)
      )
      assert.strictEqual(yield* status, 503)
      assert.strictEqual(yield* status, 200)
      yield* Fiber.interrupt(server)
    })
  )
})
