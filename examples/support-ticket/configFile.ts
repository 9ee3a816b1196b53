/**
 * The demo's configuration as the file the `modelgate` CLI reads (`gateway.json` next to this
 * module): the JSON configuration of `gateway.ts`, its output schemas as the JSON Schemas the
 * gateway derives from them, the names of its degrade handlers, and the adapter serving `vllm-eu`.
 * `examples/test/demoConfigFile.test.ts` keeps the file equal to this; regenerate it with
 * `node --conditions=source --import tsx support-ticket/configFile.ts > support-ticket/gateway.json`.
 */
import { JsonSchemaFeatures } from "@modelgate/core"
import { pathToFileURL } from "node:url"
import { Classification, configJson, TicketFields } from "./gateway.js"

export const configFile = () => ({
  ...configJson(1),
  schemas: {
    Classification: JsonSchemaFeatures.fromSchema(Classification),
    TicketFields: JsonSchemaFeatures.fromSchema(TicketFields)
  },
  degradeHandlers: ["classifyByKeywords", "extractManually"],
  adapters: { "vllm-eu": "openai-compatible" }
})

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.stdout.write(`${JSON.stringify(configFile(), null, 2)}\n`)
}
