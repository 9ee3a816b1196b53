/**
 * Typed workflow names for a configuration written in code: registered (`ModelGateway.Register`),
 * `ModelGateway.workflow` accepts only the configuration's workflow names. The `@ts-expect-error`
 * lines below fail the type check (`tsc -b`) if a misspelled name ever compiles again.
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import { Effect, Schema } from "effect"

const config = GatewayConfig.make({
  targets: [{ ref: "mini@eu", catalogue: "openai/gpt-4.1-mini", regions: ["eu"], dataClasses: ["internal"] }],
  workflows: [
    {
      name: "ticket.classify",
      prompt: { id: "classify" },
      route: ["mini@eu"],
      timeout: 3000,
      regions: ["eu"],
      dataClass: "internal"
    },
    {
      name: "ticket.reply",
      prompt: { id: "reply" },
      route: ["mini@eu"],
      timeout: 3000,
      regions: ["eu"],
      dataClass: "internal"
    }
  ]
})

declare module "@modelgate/core/ModelGateway" {
  interface Register {
    readonly config: typeof config
  }
}

const Label = Schema.Struct({ label: Schema.String })

describe("typed workflow names", () => {
  it("a registered configuration's names type-check; a misspelled one does not compile", () => {
    const names: ReadonlyArray<GatewayConfig.WorkflowNames<typeof config>> = ["ticket.classify", "ticket.reply"]
    // @ts-expect-error "ticket.clasify" is not a workflow of the registered configuration
    const misspelled: GatewayConfig.WorkflowNames<typeof config> = "ticket.clasify"
    const classify = ModelGateway.workflow("ticket.classify", Label)
    assert.strictEqual(classify.name, "ticket.classify")
    // @ts-expect-error a misspelled workflow name does not compile once the configuration is registered
    assert.throws(() => ModelGateway.workflow("ticket.clasify!", Label))
    assert.deepStrictEqual(names, ["ticket.classify", "ticket.reply"])
    assert.strictEqual(misspelled, "ticket.clasify")
  })

  it.effect("the configuration written in code decodes with the names it was typed with", () =>
    Effect.gen(function* () {
      const decoded = yield* GatewayConfig.decode(config)
      assert.deepStrictEqual(
        decoded.workflows.map((w) => w.name),
        ["ticket.classify", "ticket.reply"]
      )
    })
  )
})
