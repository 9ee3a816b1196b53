import { Effect } from "effect"
import { buildGateway, command, instantAdapter, target, workflow } from "./bench/fixtures.js"
const t = target("model://bench/instant@eu", "bench")
const wf = workflow("bench.call", [t.ref])
const stack = await buildGateway({ targets: [t], workflows: [wf], adapters: { bench: instantAdapter } })
const via = stack.gateway.generate(command("bench.call"))
for (let i = 0; i < 60000; i++) await Effect.runPromise(via)
await stack.dispose()
