/**
 * Tenants the host vouches for (`Tenancy`): tenant-dedicated targets serve only their vouched
 * tenants, workflows bound to tenants refuse the rest, a command cannot name another tenant than the
 * vouched one, and the evidence says who vouched. Startup rejects a bound workflow its route cannot
 * serve.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway, Tenancy } from "@modelgate/core"
import type { ModelCommand } from "@modelgate/core/ModelCommand"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Effect, Exit, Fiber, Layer, Option, Schema, TestClock } from "effect"
import { command, refs, target, workflow, exclusionsOf } from "./fixtures.js"

/** acme's own deployment: its own provider id, so its own adapter and credential. */
const dedicated = "model://acme-openai/acme-small@eu" as const
const providers = ["openai", "anthropic", "acme-openai"]

const withTenants = (t: ModelTarget, tenants: ReadonlyArray<string>) =>
  Schema.decodeSync(ModelTarget)({ ...Schema.encodeSync(ModelTarget)(t), tenants })

const acmeDeployment = withTenants(target(dedicated, "acme-openai"), ["acme"])
const targets = [acmeDeployment, target(refs.primary, "openai"), target(refs.fallback, "anthropic")]

const workflows = [
  // A shared workflow: acme's calls go to acme's deployment first, everyone's to the shared one.
  workflow({ name: "ticket.reply", route: [dedicated, refs.primary] }),
  // Only acme's deployment: nobody else can be served.
  workflow({ name: "acme.only", route: [dedicated] }),
  // Bound to acme: every other tenant is refused before routing.
  workflow({ name: "acme.bound", route: [dedicated, refs.primary], tenants: ["acme"] })
]

const layerFor = (config: { readonly requireVouchedTenant?: boolean } = {}) =>
  ModelGateway.layer({ config: GatewayConfig.GatewayConfig.make({ targets, workflows, ...config }) }).pipe(
    Layer.provideMerge(
      ScriptedProvider.layer({
        providers,
        scripts: {
          [dedicated]: Array.from({ length: 8 }, () => ScriptedProvider.success({ after: 10 })),
          [refs.primary]: Array.from({ length: 8 }, () => ScriptedProvider.success({ after: 20 }))
        }
      })
    ),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
    )
  )

const acme: Tenancy.Identity = { tenant: Schema.decodeSync(Tenancy.TenantId)("acme"), authority: "api-key" }
const globex: Tenancy.Identity = {
  tenant: Schema.decodeSync(Tenancy.TenantId)("globex"),
  authority: "oidc:https://issuer.test",
  subject: "user-42"
}

/** Runs `generate` for `cmd` (vouched for `identity`, if given) to its end in virtual time. */
const generate = (cmd: ModelCommand, identity?: Tenancy.Identity) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const call = Effect.exit(gateway.generate(cmd))
    const fiber = yield* Effect.fork(identity === undefined ? call : Tenancy.vouch(call, identity))
    yield* TestClock.adjust(1_000)
    return yield* Fiber.join(fiber)
  })
const attempted = Effect.flatMap(ScriptedProvider.ScriptedProvider, (s) =>
  Effect.map(s.attempts, (logs) => logs.map((l) => l.target))
)
const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

describe("Tenancy: targets dedicated to tenants", () => {
  it.effect("a call vouched for acme is served by acme's deployment; the evidence says who vouched", () =>
    Effect.gen(function* () {
      const exit = yield* generate(command("ticket.reply"), acme)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.strictEqual<string | undefined>(exit.value.evidence.target, dedicated)
        assert.deepStrictEqual(exit.value.evidence.identity, acme)
      }
      assert.deepStrictEqual(yield* attempted, [dedicated])
      const [record] = yield* records
      assert.strictEqual(record?.evidence.identity?.authority, "api-key")
    }).pipe(Effect.provide(layerFor()))
  )

  it.effect("another vouched tenant never reaches it: excluded as TENANT_NOT_ALLOWED, without naming its tenants", () =>
    Effect.gen(function* () {
      const exit = yield* generate(command("ticket.reply", { tenant: "globex" }), globex)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.strictEqual<string | undefined>(exit.value.evidence.target, refs.primary)
        const excluded = exit.value.evidence.excluded.find((e) => e.target === dedicated)
        assert.strictEqual(excluded?.reason, "TENANT_NOT_ALLOWED")
        assert.notInclude(excluded?.detail ?? "", "acme")
        assert.deepStrictEqual(exit.value.evidence.identity, globex)
      }
      assert.deepStrictEqual(yield* attempted, [refs.primary])
    }).pipe(Effect.provide(layerFor()))
  )

  it.effect('a command that only says tenant "acme" (nobody vouched) does not open acme\'s deployment', () =>
    Effect.gen(function* () {
      const exit = yield* generate(command("ticket.reply"))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.strictEqual<string | undefined>(exit.value.evidence.target, refs.primary)
        assert.isUndefined(exit.value.evidence.identity)
      }
      const only = yield* generate(command("acme.only"))
      const error = failureOf(only)
      assert.strictEqual(error?._tag, "NoEligibleRoute")
      if (error?._tag === "NoEligibleRoute") {
        assert.deepStrictEqual(exclusionsOf(error), [[dedicated, "TENANT_NOT_ALLOWED"]])
      }
      assert.deepStrictEqual(yield* attempted, [refs.primary])
    }).pipe(Effect.provide(layerFor()))
  )

  it.effect("no other field of a command reaches it either", () =>
    Effect.gen(function* () {
      // Fields a caller controls that could be mistaken for a route, an identity or a key.
      const attemptsAt: ReadonlyArray<Partial<typeof ModelCommand.Encoded>> = [
        { sessionKey: "acme" },
        { runId: "acme", step: 0 },
        { segment: "acme" },
        { regions: ["eu"] },
        { dataClass: "internal" },
        { escalate: true }
      ]
      for (const extra of attemptsAt) {
        const exit = yield* generate(command("acme.only", extra))
        assert.strictEqual(failureOf(exit)?._tag, "NoEligibleRoute", JSON.stringify(extra))
      }
      assert.deepStrictEqual(yield* attempted, [])
    }).pipe(Effect.provide(layerFor()))
  )
})

describe("Tenancy: the command's tenant is the vouched one", () => {
  it.effect("a command naming another tenant than the vouched one is refused before anything (TENANT_MISMATCH)", () =>
    Effect.gen(function* () {
      // globex vouched, the command says acme: no route, no budget, no provider.
      const exit = yield* generate(command("ticket.reply", { tenant: "acme" }), globex)
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "PolicyViolation")
      if (error?._tag === "PolicyViolation") assert.strictEqual(error.reason, "TENANT_MISMATCH")
      assert.deepStrictEqual(yield* attempted, [])
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "failed")
      assert.strictEqual(record?.errorReason, "TENANT_MISMATCH")
    }).pipe(Effect.provide(layerFor()))
  )
})

describe("Tenancy: workflows bound to tenants", () => {
  it.effect(
    "serve their vouched tenants; refuse the unvouched (TENANT_NOT_VOUCHED) and the others (TENANT_NOT_ALLOWED)",
    () =>
      Effect.gen(function* () {
        const unvouched = failureOf(yield* generate(command("acme.bound")))
        assert.strictEqual(unvouched?._tag === "PolicyViolation" ? unvouched.reason : undefined, "TENANT_NOT_VOUCHED")
        const other = failureOf(yield* generate(command("acme.bound", { tenant: "globex" }), globex))
        assert.strictEqual(other?._tag === "PolicyViolation" ? other.reason : undefined, "TENANT_NOT_ALLOWED")
        assert.deepStrictEqual(yield* attempted, [])
        const served = yield* generate(command("acme.bound"), acme)
        assert.isTrue(Exit.isSuccess(served))
        assert.deepStrictEqual(yield* attempted, [dedicated])
      }).pipe(Effect.provide(layerFor()))
  )

  it.effect("requireVouchedTenant: every call needs a vouched tenant", () =>
    Effect.gen(function* () {
      const refused = failureOf(yield* generate(command("ticket.reply")))
      assert.strictEqual(refused?._tag === "PolicyViolation" ? refused.reason : undefined, "TENANT_NOT_VOUCHED")
      const served = yield* generate(command("ticket.reply", { tenant: "globex" }), globex)
      assert.isTrue(Exit.isSuccess(served))
      assert.deepStrictEqual(yield* attempted, [refs.primary])
    }).pipe(Effect.provide(layerFor({ requireVouchedTenant: true })))
  )

  it("startup: a bound tenant no route target can serve is a config problem with a fix", () => {
    const config = GatewayConfig.GatewayConfig.make({
      targets,
      workflows: [workflow({ name: "globex.bound", route: [dedicated], tenants: ["acme", "globex"] })]
    })
    const problems = GatewayConfig.validate({ config }, new Set(providers))
    assert.deepStrictEqual(
      problems.map((p) => [p.path, p.reason]),
      [["workflows[0].tenants[1]", "TENANT_UNSERVED"]]
    )
    assert.include(problems[0]?.fix ?? "", "globex")
  })
})
