/**
 * A dev server on an ephemeral port for tests: the mock provider, a memory CallRecorder and, when
 * asked, a memory budget the test can read.
 */
import { Budgets, BudgetStore, CallRecorder, ModelCommand } from "@modelgate/core"
import type { MockProviderServer } from "@modelgate/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import OpenAI from "openai"
import * as DevDefault from "../src/DevDefault.js"
import type { KeyRateLimit, Limits } from "../src/ServerConfig.js"

export const devKey = "mg-test-key-0123456789"

export interface Harness {
  readonly url: string
  readonly mock: MockProviderServer.Service
  readonly recorder: CallRecorder.Memory
  readonly budgets: Budgets.Service | undefined
  /** The dev tenant's balance (a harness started with a budget). */
  readonly balance: () => Promise<Budgets.Balance>
  readonly client: (key?: string) => OpenAI
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  readonly inflight: () => number
  readonly shutdown: () => Promise<void>
  readonly close: () => Promise<void>
}

export interface HarnessOptions {
  readonly rateLimit?: KeyRateLimit | undefined
  readonly budget?: number | undefined
  readonly limits?: Partial<Limits> | undefined
}

export const startHarness = async (options: HarnessOptions = {}): Promise<Harness> => {
  const scope = Effect.runSync(Scope.make())
  const recorder = await Effect.runPromise(CallRecorder.makeMemory)
  const budgets =
    options.budget === undefined
      ? undefined
      : await Effect.runPromise(
          Budgets.make({ tenants: { dev: { limit: options.budget } } }).pipe(Effect.provide(BudgetStore.layerMemory))
        )
  const dev = await Effect.runPromise(
    DevDefault.start({
      key: devKey,
      port: 0,
      rateLimit: options.rateLimit,
      limits: options.limits,
      recorder: Layer.succeed(CallRecorder.CallRecorder, recorder),
      budgets: budgets === undefined ? undefined : Layer.succeed(Budgets.Budgets, budgets),
      mock: { record: true }
    }).pipe(Scope.extend(scope))
  )
  const url = dev.server.url
  return {
    url,
    mock: dev.mock,
    recorder,
    budgets,
    balance: () =>
      budgets === undefined
        ? Promise.reject(new Error("started without a budget"))
        : Effect.runPromise(budgets.balance(ModelCommand.TenantId.make("dev"))),
    client: (key = devKey) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0, timeout: 20_000 }),
    run: (effect) => Effect.runPromise(effect),
    inflight: dev.server.inflight,
    shutdown: () => Effect.runPromise(dev.server.shutdown),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** The `schemas` of a JSON server configuration: the dev workflow's `Ticket` output as JSON Schema. */
export const ticketSchemas = {
  Ticket: {
    type: "object",
    properties: {
      category: { type: "string", enum: ["billing", "technical", "other"] },
      summary: { type: "string" }
    },
    required: ["category", "summary"]
  }
}
