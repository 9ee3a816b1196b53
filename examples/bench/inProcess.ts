/**
 * §1 In-process overhead: `ModelGateway.generate` over an adapter vs calling the same adapter
 * directly, sequentially (per-call latency) and with 1,000 concurrent fibers (throughput).
 */
import type { ModelCommand } from "@modelgate/core/ModelCommand"
import type * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Effect } from "effect"
import {
  buildGateway,
  Classification,
  command,
  instantAdapter,
  jsonAdapter,
  proseBody,
  requestFor,
  structuredBody,
  target,
  workflow
} from "./fixtures.js"
import { callsFor, median, type PairedResult, paired, type Profile, timed } from "./harness.js"

export interface Throughput {
  /** Calls per second, median over rounds. */
  readonly baseline: number
  readonly subject: number
  /** subject / baseline. */
  readonly ratio: number
  /** Added wall time per call at this concurrency, µs (1/subject − 1/baseline). */
  readonly addedUsPerCall: number
}

export interface InProcessCase {
  readonly name: string
  readonly sequential: PairedResult
  readonly concurrent: Throughput | undefined
}

export interface InProcessResults {
  readonly concurrency: number
  readonly cases: ReadonlyArray<InProcessCase>
}

/** Calls/s of `call` run `calls` times with `concurrency` fibers, in one runtime run. */
const throughputOnce = async (call: Effect.Effect<unknown, unknown>, calls: number, concurrency: number) => {
  const items = Array.from({ length: calls }, (_, i) => i)
  const t = await timed(() => Effect.runPromise(Effect.forEach(items, () => call, { concurrency, discard: true })))
  return (calls / t.wallMs) * 1000
}

/** Interleaved rounds of baseline and subject throughput. */
export const pairedThroughput = async (
  profile: Profile,
  baseline: Effect.Effect<unknown, unknown>,
  subject: Effect.Effect<unknown, unknown>,
  concurrency: number
): Promise<Throughput> => {
  // Warm-up (JIT, fiber pool); its rates size the rounds to about `roundSeconds` each.
  const warm = Math.min(2_000, profile.throughputCalls)
  const calls = callsFor(
    Math.min(await throughputOnce(baseline, warm, concurrency), await throughputOnce(subject, warm, concurrency)),
    profile.roundSeconds,
    Math.min(2 * concurrency, profile.throughputCalls),
    profile.throughputCalls
  )
  const b: Array<number> = []
  const s: Array<number> = []
  for (let round = 0; round < profile.rounds; round++) {
    if (round % 2 === 0) {
      b.push(await throughputOnce(baseline, calls, concurrency))
      s.push(await throughputOnce(subject, calls, concurrency))
    } else {
      s.push(await throughputOnce(subject, calls, concurrency))
      b.push(await throughputOnce(baseline, calls, concurrency))
    }
  }
  const baselineRate = median(b)
  const subjectRate = median(s)
  return {
    baseline: baselineRate,
    subject: subjectRate,
    ratio: subjectRate / baselineRate,
    addedUsPerCall: 1e6 / subjectRate - 1e6 / baselineRate
  }
}

const measureCase = async (
  profile: Profile,
  name: string,
  adapter: Omit<ProviderAdapter.ProviderAdapter, "provider">,
  options: { readonly schema: boolean; readonly concurrency: number | undefined }
): Promise<InProcessCase> => {
  const t = target("model://bench/instant@eu", "bench")
  const wf = workflow("bench.call", [t.ref], options.schema ? "Classification" : undefined)
  const stack = await buildGateway({
    targets: [t],
    workflows: [wf],
    adapters: { bench: adapter },
    schemas: { Classification }
  })
  try {
    const cmd: ModelCommand = command("bench.call")
    const request = requestFor(cmd, t)
    // Both sides build their Effect per call, as a caller does: work done when `generate` is called
    // (rather than when its Effect runs) is counted too.
    const direct = Effect.suspend(() => adapter.generate(request))
    const viaGateway = Effect.suspend(() => stack.gateway.generate(cmd))
    // The gateway really answers (and validates, for the structured case) before we time it.
    const check = await Effect.runPromise(viaGateway)
    if (check.evidence.attempts.length !== 1 || (options.schema && check.evidence.schemaValid !== true)) {
      throw new Error(`bench case ${name}: unexpected gateway result`)
    }
    const sequential = await paired(
      profile,
      () => Effect.runPromise(direct),
      () => Effect.runPromise(viaGateway)
    )
    const concurrent =
      options.concurrency === undefined
        ? undefined
        : await pairedThroughput(profile, direct, viaGateway, options.concurrency)
    return { name, sequential, concurrent }
  } finally {
    await stack.dispose()
  }
}

export const run = async (profile: Profile): Promise<InProcessResults> => {
  const concurrency = 1_000
  const cases = [
    await measureCase(profile, "instant adapter", instantAdapter, { schema: false, concurrency }),
    await measureCase(profile, "1 KB JSON adapter", jsonAdapter(proseBody), { schema: false, concurrency }),
    await measureCase(profile, "1 KB JSON adapter + output schema", jsonAdapter(structuredBody), {
      schema: true,
      concurrency: undefined
    })
  ]
  return { concurrency, cases }
}
