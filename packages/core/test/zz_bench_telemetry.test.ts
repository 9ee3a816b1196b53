import { it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import * as Telemetry from "@modelgate/core/Telemetry"
import { Effect, Layer, Tracer, Option, Context } from "effect"
import { command, definition, targets } from "./fixtures.js"

const instant = (p: string) => ProviderAdapter.layer(p, Effect.succeed({
  generate: () => Effect.succeed({ text: "ok", toolCalls: [], finishReason: "stop" as const, refusal: false, usage: undefined, modelVersion: "m", requestId: "r", httpStatus: 200 }),
  stream: () => Effect.dieMessage("x") as never
}))
const noopRecorder = Layer.succeed(CallRecorder.CallRecorder, { record: () => Effect.void })
const layer = ModelGateway.layer(definition).pipe(
  Layer.provide(Layer.mergeAll(instant("openai"), instant("anthropic"), instant("gemini"), instant("vllm"))),
  Layer.provide(Layer.mergeAll(Budgets.layerUnlimited, Concurrency.layerUnbounded, Health.layerNoop, noopRecorder)))

it.live("bench", () => Effect.gen(function* () {
  const gw = yield* ModelGateway.ModelGateway
  const cmd = command("ticket.reply")
  const N = 20000
  const time = (label: string, eff: Effect.Effect<unknown, unknown>) => Effect.gen(function* () {
    for (let i = 0; i < 3000; i++) yield* eff
    const best: number[] = []
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now()
      for (let i = 0; i < N; i++) yield* eff
      best.push(((performance.now() - t0) * 1000) / N)
    }
    best.sort((a, b) => a - b)
    console.log(`B ${label}: median ${best[2]!.toFixed(2)} µs/call, min ${best[0]!.toFixed(2)}`)
  })
  yield* time("generate (spans+metrics, native tracer)", Effect.ignore(gw.generate(cmd)))
  yield* time("generate (tracer disabled)", Effect.ignore(gw.generate(cmd)).pipe(Effect.withTracerEnabled(false)))
  yield* time("generate (spans+metrics, native tracer) again", Effect.ignore(gw.generate(cmd)))
  // pieces
  const rec = yield* Effect.gen(function* () {
    const mem = yield* CallRecorder.makeMemory
    return mem
  })
  void rec
  let record: any
  const recLayer = Layer.succeed(CallRecorder.CallRecorder, { record: (r) => Effect.sync(() => { record = r }) })
  yield* Effect.provide(Effect.flatMap(ModelGateway.ModelGateway, (g) => Effect.ignore(g.generate(cmd))), ModelGateway.layer(definition).pipe(
    Layer.provide(Layer.mergeAll(instant("openai"), instant("anthropic"), instant("gemini"), instant("vllm"))),
    Layer.provide(Layer.mergeAll(Budgets.layerUnlimited, Concurrency.layerUnbounded, Health.layerNoop, recLayer))))
  const end = { target: targets[0], knownWorkflow: true, maxOutputTokens: 100, permitWaitMs: 0 }
  const M = 200000
  let t0 = performance.now()
  for (let i = 0; i < M; i++) Telemetry.unsafeRecordMetrics(record, end)
  console.log(`B unsafeRecordMetrics: ${(((performance.now() - t0) * 1000) / M).toFixed(3)} µs/call`)
  const span = Tracer.nativeSpan ? undefined : undefined
  void span
  const tracer = yield* Effect.tracer
  const s = tracer.span("x", Option.none(), Context.empty(), [], 0n, "internal")
  t0 = performance.now()
  for (let i = 0; i < M; i++) { Telemetry.annotateCall(s, record, end); Telemetry.annotateAttempt(s, record.evidence.attempts[0]) }
  console.log(`B annotateCall+annotateAttempt (native span): ${(((performance.now() - t0) * 1000) / M).toFixed(3)} µs/call`)
}).pipe(Effect.provide(layer)), 120_000)
