/**
 * `examples/support-ticket/gateway.json` is the demo's configuration as the `modelgate` CLI reads
 * it (`modelgate check` and `modelgate explain` run on it, see packages/cli/test): it must stay equal
 * to the configuration, schemas and handlers the demo builds in code.
 */
import { describe, expect, it } from "vitest"
import { configFile } from "../support-ticket/configFile.js"
import { code } from "../support-ticket/gateway.js"
import { read } from "./readmeBlocks.js"

describe("the demo's configuration file", () => {
  it("is the demo's configuration, its schemas' JSON Schemas and its handler names", () => {
    expect(JSON.parse(read("../support-ticket/gateway.json"))).toEqual(configFile())
  })

  it("names every schema and degrade handler the demo gives in code", () => {
    const file = configFile()
    expect(Object.keys(file.schemas).sort()).toEqual(Object.keys(code.schemas ?? {}).sort())
    expect([...file.degradeHandlers].sort()).toEqual(Object.keys(code.degradeHandlers ?? {}).sort())
  })
})
