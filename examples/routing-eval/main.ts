/**
 * `pnpm --filter @modelgate/examples routing-eval [tasks.json]`: replays the labelled task set
 * through the router under each policy of `evaluate.ts` and prints the comparison.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Effect, Schema } from "effect"
import { Dataset, evaluate } from "./evaluate.js"
import { render } from "./table.js"

const path = process.argv[2] ?? fileURLToPath(new URL("./tasks.json", import.meta.url))
const dataset = Schema.decodeUnknownSync(Dataset)(JSON.parse(readFileSync(path, "utf8")))
// Large inputs are counted in slices that yield to the event loop: run it as a promise.
const report = await Effect.runPromise(evaluate(dataset))
process.stdout.write(`${render(report).join("\n")}\n`)
