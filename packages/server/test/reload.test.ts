/**
 * `Server.Running.reload` on a server started from a JSON configuration (what `serve --config`
 * reads, and what SIGHUP re-reads): keys rotated, a workflow added, live limits, rejected reloads
 * (every problem listed, nothing changed; fields that need a restart named), a call in flight
 * across a reload, and concurrent reloads. The provider is a loopback OpenAI-wire upstream that can
 * hold an answer (`gatedUpstream.ts`).
 */
import { CallRecorder } from "@modelgate/core"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { gatewayConfig } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import type * as Server from "../src/Server.js"
import * as ServerConfig from "../src/ServerConfig.js"
import { ticketSchemas } from "./fixtures.js"
import { type GatedUpstream, startGatedUpstream } from "./gatedUpstream.js"

const chatTarget = gatewayConfig.targets[0]
const chatWorkflow = gatewayConfig.workflows[0]

let upstream: GatedUpstream
beforeAll(async () => {
  upstream = await startGatedUpstream()
})
afterAll(() => upstream.stop())

const key = (id: string, workflows: ReadonlyArray<string> = ["*"]) => ({
  id,
  sha256: hashKey(`key-${id}`),
  tenant: "acme",
  workflows
})

/** A configuration file's JSON: one chat target, the workflows named (each a copy of `chat`). */
const fileJson = (options: {
  readonly keys: ReadonlyArray<ReturnType<typeof key>>
  readonly workflows?: ReadonlyArray<string>
  readonly aliases?: Readonly<Record<string, string>>
  readonly limits?: Readonly<Record<string, number>>
}) => ({
  listen: { port: 0 },
  keys: options.keys,
  aliases: options.aliases ?? {},
  limits: options.limits ?? {},
  providers: [{ id: "openai", kind: "openai", baseUrl: upstream.baseUrl }],
  gateway: {
    targets: [chatTarget],
    workflows: (options.workflows ?? ["chat"]).map((name) => ({ ...chatWorkflow, name }))
  },
  recorder: "none"
})

const decode = (json: unknown) => Effect.runPromise(ServerConfig.decode(json))

const scopes: Array<Scope.CloseableScope> = []
afterEach(async () => {
  upstream.open()
  for (const scope of scopes.splice(0)) await Effect.runPromise(Scope.close(scope, Exit.void))
})

const start = async (json: unknown): Promise<Server.Running> => {
  const scope = Effect.runSync(Scope.make())
  scopes.push(scope)
  const config = await decode(json)
  const recorder = Effect.runSync(CallRecorder.makeMemory)
  return Effect.runPromise(
    Launch.start(config, { recorder: Layer.succeed(CallRecorder.CallRecorder, recorder) }).pipe(Scope.extend(scope))
  )
}

const reload = async (server: Server.Running, json: unknown) => Effect.runPromise(server.reload(await decode(json)))

const rejection = async (server: Server.Running, json: unknown) =>
  Effect.runPromise(Effect.flip(server.reload(await decode(json))))

const chat = (server: Server.Running, keyId: string, model = "chat", content = "hi") =>
  fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer key-${keyId}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content }] })
  })

const modelIds = async (server: Server.Running, keyId: string) => {
  const response = await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer key-${keyId}` } })
  const body: { readonly data: ReadonlyArray<{ readonly id: string }> } = await response.json()
  return body.data.map((m) => m.id).sort()
}

describe("reloading a running server", () => {
  it("rotates keys without a restart: the removed key gets 401 at once, the new one 200", async () => {
    const server = await start(fileJson({ keys: [key("old")] }))
    expect((await chat(server, "old")).status).toBe(200)
    expect((await chat(server, "new")).status).toBe(401)
    await reload(server, fileJson({ keys: [key("new")] }))
    expect((await chat(server, "old")).status).toBe(401)
    expect((await chat(server, "new")).status).toBe(200)
    expect((await fetch(`${server.url}/v1/models`, { headers: { authorization: "Bearer key-old" } })).status).toBe(401)
    expect(await modelIds(server, "new")).toEqual(["chat"])
  })

  it("adds a workflow and an alias, callable at once, listed by /v1/models, under the new config version", async () => {
    const server = await start(fileJson({ keys: [key("ops")] }))
    expect((await chat(server, "ops", "summarize")).status).toBe(404)
    const version = await reload(
      server,
      fileJson({ keys: [key("ops")], workflows: ["chat", "summarize"], aliases: { short: "summarize" } })
    )
    const answer = await chat(server, "ops", "short")
    expect(answer.status).toBe(200)
    expect(answer.headers.get("x-modelgate-config-version")).toBe(version)
    expect(await modelIds(server, "ops")).toEqual(["chat", "short", "summarize"])
  })

  it("rebuilds the output schemas from the file: a structured workflow naming a new schema reloads", async () => {
    const server = await start(fileJson({ keys: [key("ops")] }))
    const structured = (schemas: Readonly<Record<string, unknown>>) => ({
      ...fileJson({ keys: [key("ops")] }),
      gateway: {
        targets: [chatTarget],
        workflows: [chatWorkflow, gatewayConfig.workflows[1]]
      },
      schemas
    })
    const error = await rejection(server, structured({}))
    expect(error.problems).toContainEqual(
      expect.stringMatching(/^\$\.gateway: workflows\[1\]\.output\.schema: UNKNOWN_SCHEMA/)
    )
    await reload(server, structured(ticketSchemas))
    expect(await modelIds(server, "ops")).toEqual(["chat", "extract"])
  })

  it("a key's workflows change with the reload (a narrowed key loses the others)", async () => {
    const server = await start(fileJson({ keys: [key("ops")], workflows: ["chat", "draft"] }))
    expect((await chat(server, "ops", "draft")).status).toBe(200)
    await reload(server, fileJson({ keys: [key("ops", ["chat"])], workflows: ["chat", "draft"] }))
    expect((await chat(server, "ops", "draft")).status).toBe(404)
    expect(await modelIds(server, "ops")).toEqual(["chat"])
  })

  it("requests during reloads see old keys with old workflows or new keys with new ones, never a mix", async () => {
    const before = fileJson({ keys: [key("old")] })
    const server = await start(before)
    const configs = [await decode(fileJson({ keys: [key("new")], workflows: ["chat", "fresh"] })), await decode(before)]
    const sequence = Array.from({ length: 20 }).flatMap(() => configs)
    // Reloads back and forth while requests arrive. New key, new workflow: 401 under the old keys,
    // 200 under the new ones; a 404 would be new keys with old workflows, another status the
    // server's view ahead of the gateway's.
    const reloads = Effect.runPromise(
      Effect.forEach(sequence, (config) =>
        // Each reload, then a turn of the event loop for the requests.
        Effect.zipRight(
          server.reload(config),
          Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
        )
      )
    )
    const during = await Promise.all(Array.from({ length: 80 }, () => chat(server, "new", "fresh")))
    await reloads
    for (const response of during) expect([200, 401]).toContain(response.status)
  })

  it("applies the limits that can change live (a smaller body cap answers 413 at once)", async () => {
    const server = await start(fileJson({ keys: [key("ops")] }))
    const long = "x".repeat(2000)
    expect((await chat(server, "ops", "chat", long)).status).toBe(200)
    await reload(server, fileJson({ keys: [key("ops")], limits: { maxBodyBytes: 1000 } }))
    expect((await chat(server, "ops", "chat", long)).status).toBe(413)
    expect((await chat(server, "ops")).status).toBe(200)
  })

  it("rejects an invalid configuration with every problem, and keeps the running one exactly", async () => {
    const server = await start(fileJson({ keys: [key("old")] }))
    const before = await chat(server, "old")
    const invalid = {
      ...fileJson({ keys: [key("new")] }),
      gateway: { targets: [chatTarget], workflows: [{ ...chatWorkflow, timeout: "soon" }] },
      schemas: { Bad: { type: "tuple" } }
    }
    const error = await rejection(server, invalid)
    expect(error._tag).toBe("ServerConfigError")
    expect(error.problems).toHaveLength(2)
    expect(error.problems).toContainEqual(expect.stringMatching(/^\$\.gateway: workflows\[0\]\.timeout: /))
    expect(error.problems).toContainEqual("$.schemas.Bad.type is not supported")
    // An alias to nowhere is found with the other problems too (here a field that needs a restart).
    const second = await rejection(server, {
      ...fileJson({ keys: [key("new")], aliases: { gone: "nowhere" } }),
      recorder: "log"
    })
    expect([...second.problems].sort()).toEqual([
      "$.aliases.gone names no workflow",
      "$.recorder changed: it needs a restart"
    ])
    const after = await chat(server, "old")
    expect(after.status).toBe(200)
    expect(after.headers.get("x-modelgate-config-version")).toBe(before.headers.get("x-modelgate-config-version"))
    expect((await chat(server, "new")).status).toBe(401)
    expect(await modelIds(server, "old")).toEqual(["chat"])
  })

  it("a configuration core rejects (a route to an unknown target) changes nothing", async () => {
    const server = await start(fileJson({ keys: [key("old")] }))
    const error = await rejection(server, {
      ...fileJson({ keys: [key("new")] }),
      gateway: {
        targets: [chatTarget],
        workflows: [{ ...chatWorkflow, route: ["model://openai/nowhere@local"] }]
      }
    })
    expect(error.problems.length).toBeGreaterThan(0)
    expect(error.problems.every((p) => p.startsWith("$.gateway: "))).toBe(true)
    expect((await chat(server, "old")).status).toBe(200)
    expect((await chat(server, "new")).status).toBe(401)
  })

  it("rejects a change that needs a restart, naming each field", async () => {
    const server = await start(fileJson({ keys: [key("old")] }))
    const changed = {
      ...fileJson({ keys: [key("new")], limits: { maxHeaderBytes: 8192 } }),
      listen: { port: server.port + 1 },
      providers: [{ id: "openai", kind: "openai", baseUrl: `${upstream.baseUrl}/other` }],
      metrics: { enabled: false }
    }
    const error = await rejection(server, changed)
    expect([...error.problems].sort()).toEqual([
      "$.limits.maxHeaderBytes changed: it needs a restart",
      "$.listen changed: it needs a restart",
      "$.metrics changed: it needs a restart",
      "$.providers changed: it needs a restart"
    ])
    expect((await chat(server, "old")).status).toBe(200)
    expect((await chat(server, "new")).status).toBe(401)
  })

  it("a call in flight across a reload that removes its key completes; the key is refused at once", async () => {
    const server = await start(fileJson({ keys: [key("leaving"), key("staying")] }))
    upstream.close()
    const arrived = upstream.received()
    const inFlight = chat(server, "leaving")
    await arrived
    await reload(server, fileJson({ keys: [key("staying")] }))
    expect((await chat(server, "leaving")).status).toBe(401)
    upstream.open()
    const answer = await inFlight
    expect(answer.status).toBe(200)
    const body: { readonly choices: ReadonlyArray<{ readonly message: { readonly content: string } }> } =
      await answer.json()
    expect(body.choices[0]?.message.content).toBe("held answer")
  })
})
