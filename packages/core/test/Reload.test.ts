import { assert, describe, it } from "@effect/vitest"
import { CallRecorder, GatewayConfig, ModelGateway } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Clock, Effect, Exit, Fiber, HashMap, Layer, Logger, Option, Stream, TestClock } from "effect"
import { command, definition, gatewayLayer, refs, targets, workflow, workflows, onRoutes } from "./fixtures.js"

/** The fixtures' configuration with `ticket.reply` routed to `route`. */
const routedTo = (route: readonly [string, ...Array<string>], version?: string): ModelGateway.ReloadSource => ({
  config: GatewayConfig.GatewayConfig.make({
    targets,
    workflows: workflows.map((w) => (w.name === "ticket.reply" ? workflow({ name: "ticket.reply", route }) : w))
  }),
  schemas: definition.schemas,
  ...(version === undefined ? {} : { version })
})

/** Forks `generate` for `ticket.reply`; the fiber yields the result with the instant it ended. */
const forkReply = Effect.flatMap(ModelGateway.ModelGateway, (gateway) =>
  Effect.fork(
    gateway
      .generate(command("ticket.reply"))
      .pipe(Effect.flatMap((result) => Effect.map(Clock.currentTimeMillis, (at) => ({ result, at }))))
  )
)

/** The route `ticket.reply` has in the running configuration. */
const routeOfReply = (gateway: ModelGateway.Service): ReadonlyArray<string> | undefined =>
  gateway.router.workflows.get("ticket.reply")?.workflow.route

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

describe("ModelGateway.reload", () => {
  it.effect("a call in flight finishes on the configuration it started with; the next call runs on the new one", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const initial = yield* gateway.configVersion
      assert.match(initial, /^cfg_[0-9a-f]{8}$/)
      const old = yield* forkReply
      yield* TestClock.adjust(100)
      const version = yield* gateway.reload(routedTo([refs.fallback], "v2"))
      assert.strictEqual(version, "v2")
      assert.strictEqual(yield* gateway.configVersion, "v2")
      assert.deepStrictEqual<ReadonlyArray<string> | undefined>(routeOfReply(gateway), [refs.fallback])
      const next = yield* forkReply
      yield* TestClock.adjust(300)
      const a = yield* Fiber.join(old)
      const b = yield* Fiber.join(next)
      // Started at 0 on the old route (primary, 300 ms); started at 100 on the new (fallback, 200 ms).
      assert.deepStrictEqual(
        [a.at, a.result.evidence.target, a.result.evidence.configVersion],
        [300, refs.primary, initial]
      )
      assert.deepStrictEqual(
        [b.at, b.result.evidence.target, b.result.evidence.configVersion],
        [300, refs.fallback, "v2"]
      )
      // The recorded evidence says the same.
      assert.deepStrictEqual(
        (yield* records).map((r) => `${r.evidence.target} ${r.evidence.configVersion}`).sort(),
        [`${refs.primary} ${initial}`, `${refs.fallback} v2`].sort()
      )
    }).pipe(onRoutes([ScriptedProvider.success({ after: 300 })], [ScriptedProvider.success({ after: 200 })]))
  )

  it.effect("a reload during 100 in-flight calls: each finishes on its own configuration, none fails", () =>
    Effect.gen(function* () {
      const before = yield* Effect.forEach(Array.from({ length: 50 }), () => forkReply)
      yield* TestClock.adjust(10)
      yield* ModelGateway.reload(routedTo([refs.fallback], "v2"))
      const after = yield* Effect.forEach(Array.from({ length: 50 }), () => forkReply)
      yield* TestClock.adjust(500)
      const done = yield* Effect.forEach([...before, ...after], (f) => Fiber.await(f))
      assert.isTrue(done.every(Exit.isSuccess))
      const seen = done.map((exit) =>
        Exit.isSuccess(exit) ? `${exit.value.result.evidence.target} ${exit.value.result.evidence.configVersion}` : ""
      )
      const initial = seen[0]!.split(" ")[1]!
      assert.match(initial, /^cfg_/)
      assert.deepStrictEqual(seen, [
        ...Array.from({ length: 50 }, () => `${refs.primary} ${initial}`),
        ...Array.from({ length: 50 }, () => `${refs.fallback} v2`)
      ])
    }).pipe(
      Effect.provide(
        gatewayLayer({
          [refs.primary]: Array.from({ length: 50 }, () => ScriptedProvider.success({ after: 300 })),
          [refs.fallback]: Array.from({ length: 50 }, () => ScriptedProvider.success({ after: 200 }))
        })
      )
    )
  )

  it.effect("a rejected reload returns the error listing every problem; the old configuration keeps serving", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const initial = yield* gateway.configVersion
      const bad: ModelGateway.ReloadSource = {
        config: GatewayConfig.GatewayConfig.make({
          targets,
          workflows: workflows.map((w) =>
            w.name === "ticket.reply"
              ? workflow({ name: "ticket.reply", route: [refs.primary, "model://openai/missing@eu"] })
              : w.name === "ticket.summarize"
                ? workflow({ name: "ticket.summarize", route: ["model://gemini/missing@us"], timeout: 0 })
                : w
          )
        }),
        schemas: definition.schemas,
        version: "v2"
      }
      const error = yield* Effect.flip(gateway.reload(bad))
      assert.strictEqual(error._tag, "GatewayConfigError")
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason]),
        [
          ["workflows[1].route[1]", "UNKNOWN_TARGET"],
          ["workflows[2].timeout", "NON_POSITIVE_TIMEOUT"],
          ["workflows[2].route[0]", "UNKNOWN_TARGET"]
        ]
      )
      // JSON is decoded first: its problems are listed too, and nothing changes either.
      const decodeError = yield* Effect.flip(gateway.reload({ json: { targets: [], workflows: [{}] } }))
      assert.isAbove(decodeError.problems.length, 1)
      assert.strictEqual(yield* gateway.configVersion, initial)
      assert.deepStrictEqual<ReadonlyArray<string> | undefined>(routeOfReply(gateway), [refs.primary, refs.fallback])
      const call = yield* forkReply
      yield* TestClock.adjust(100)
      const { result, at } = yield* Fiber.join(call)
      assert.deepStrictEqual([at, result.evidence.target, result.evidence.configVersion], [100, refs.primary, initial])
    }).pipe(onRoutes([ScriptedProvider.success({ after: 100 })]))
  )

  it.effect("reloadingFrom applies a stream's valid configurations in order and skips invalid ones", () => {
    const logs: Array<string> = []
    const logger = Logger.make(({ message, annotations }) => {
      const text = Array.isArray(message) ? message.join(" ") : String(message)
      if (!text.startsWith("modelgate: configuration")) return
      const note = HashMap.get(annotations, "problems").pipe(
        Option.orElse(() => HashMap.get(annotations, "configVersion")),
        Option.getOrElse(() => "")
      )
      logs.push(`${text} ${String(note)}`)
    })
    // One configuration a second of virtual time: at 1000, 2000, 3000 and 4000.
    const source = Stream.fromIterable<ModelGateway.ReloadSource>([
      routedTo([refs.fallback], "v2"),
      routedTo(["model://openai/missing@eu"], "bad"),
      { json: { targets: "no", workflows: "no" }, version: "bad-json" },
      routedTo([refs.primary], "v3")
    ]).pipe(Stream.tap(() => Effect.sleep(1000)))
    return Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const versions: Array<string> = [yield* gateway.configVersion]
      for (let i = 0; i < 4; i++) {
        yield* TestClock.adjust(1000)
        versions.push(yield* gateway.configVersion)
      }
      assert.match(versions[0]!, /^cfg_/)
      // Each valid one lands when it is emitted; a rejected one changes nothing.
      assert.deepStrictEqual(versions.slice(1), ["v2", "v2", "v2", "v3"])
      assert.deepStrictEqual<ReadonlyArray<string> | undefined>(routeOfReply(gateway), [refs.primary])
      assert.deepStrictEqual(logs, [
        "modelgate: configuration reloaded v2",
        "modelgate: configuration reload rejected 1",
        "modelgate: configuration reload rejected 2",
        "modelgate: configuration reloaded v3"
      ])
    }).pipe(
      Effect.provide(
        ModelGateway.layer(definition).pipe(
          ModelGateway.reloadingFrom(source),
          Layer.provide(gatewayLayer({})),
          Layer.provide(Logger.replace(Logger.defaultLogger, logger))
        )
      )
    )
  })
})
