/**
 * Shared by the Redis suites: one real `redis-server` per test file, and store options with a key
 * prefix of each test's own (tests share the file's server, never keys).
 */
import { afterAll, beforeAll } from "@effect/vitest"
import type * as Redis from "@modelgate/adapters/redis"
import { GatewayConfig } from "@modelgate/core"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { Workflow } from "@modelgate/core/Workflow"
import { type RedisServer, startRedis } from "@modelgate/testing/RedisServer"
import { Duration, Effect, Schema } from "effect"
import { Redis as IORedis } from "ioredis"

/** @see redisPerFile */
export interface RedisPerFile {
  /** The file's server (started before its first test). */
  readonly server: () => RedisServer
  /** Options for the file's server with a fresh key prefix (command timeout 2 s unless `extra` says). */
  readonly freshOptions: (extra?: Partial<Redis.Options>) => Redis.Options
}

let seq = 0

/** Starts a `redis-server` before the calling file's tests and stops it after them. */
export const redisPerFile = (): RedisPerFile => {
  let started: RedisServer | undefined
  beforeAll(async () => {
    started = await startRedis()
  }, 20_000)
  afterAll(async () => {
    await started?.stop()
  })
  const server = () => {
    if (started === undefined) throw new Error("redis-server is started before the file's tests")
    return started
  }
  return {
    server,
    freshOptions: (extra = {}) => ({
      url: server().url,
      keyPrefix: `t${++seq}-${Date.now()}:`,
      commandTimeout: Duration.seconds(2),
      ...extra
    })
  }
}

/** A `redis-server` of the test's own, stopped when its scope closes (for tests that pause or kill it). */
export const ownRedis = Effect.acquireRelease(
  Effect.promise(() => startRedis()),
  (s) => Effect.promise(() => s.stop())
)

/**
 * Two gateway processes over one Redis: runs `make` (a service with a client of its own) twice, in
 * order.
 */
export const twoProcesses = <A, E, R>(make: Effect.Effect<A, E, R>) => Effect.all([make, make])

/** Calls per command name on the server (`INFO commandstats`), read on a connection of its own. */
export const commandStats = (url: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => new IORedis(url)),
    (admin) =>
      Effect.promise(async () => {
        const info = await admin.info("commandstats")
        const counts: Record<string, number> = {}
        for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) counts[m[1]!] = Number(m[2])
        return counts
      }),
    (admin) => Effect.sync(() => admin.disconnect())
  )

/**
 * A configuration of one target `model://<provider>/small@eu` (capabilities overridden by
 * `capabilities`) and one workflow "ticket.reply" routed to it (fields overridden by `workflow`).
 */
export const oneTargetDefinition = (
  provider: string,
  capabilities: Partial<(typeof ModelTarget.Encoded)["capabilities"]>,
  workflow: Partial<typeof Workflow.Encoded>
): { readonly ref: string; readonly definition: GatewayConfig.Definition } => {
  const ref = `model://${provider}/small@eu`
  const definition: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({
      targets: [
        Schema.decodeSync(ModelTarget)({
          ref,
          provider,
          model: "small",
          capabilities: {
            vision: false,
            tools: false,
            streaming: true,
            structuredOutput: { mode: "none" },
            contextWindow: 128_000,
            maxOutputTokens: 4096,
            ...capabilities
          },
          regions: ["eu"],
          dataClasses: ["internal"],
          pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6, currency: "USD", pricingVersion: "p1" },
          limits: { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 10 },
          status: "active"
        })
      ],
      workflows: [
        Schema.decodeSync(Workflow)({
          name: "ticket.reply",
          policyVersion: "policy-1",
          prompt: { id: "reply", version: "1" },
          route: [ref],
          timeout: 5_000,
          regions: ["eu"],
          dataClass: "internal",
          ...workflow
        })
      ]
    })
  }
  return { ref, definition }
}

/** Acme's "Where is my order?" to "ticket.reply". */
export const replyCommand = Schema.decodeSync(ModelCommand)({
  workflow: "ticket.reply",
  tenant: "acme",
  messages: [{ _tag: "user", content: "Where is my order?" }]
})
