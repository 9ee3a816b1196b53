/**
 * Issue 26, low item: every public decode path of `ModelCommand` is value-free — not only
 * `ModelCommand.decodeUnknown` but `Schema.decodeSync` / `decodeUnknownEither` / `validateSync` of
 * the class itself, whose errors would otherwise quote the input (a key, an e-mail address in the
 * prompt).
 */
import { assert, describe, it } from "@effect/vitest"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import { Either, Schema } from "effect"

const secret = "sk-live-SECRET-4111111111111111"

const hostile: ReadonlyArray<unknown> = [
  // a secret where a number belongs, in a label, in a nested message part, in a pattern-checked name
  { workflow: "support.reply", tenant: "acme", messages: [{ _tag: "user", content: "hi" }], timeout: secret },
  {
    workflow: "support.reply",
    tenant: "acme",
    messages: [{ _tag: "user", content: "hi" }],
    dataClass: secret.repeat(4)
  },
  { workflow: "support.reply", tenant: "acme", messages: [{ _tag: "nobody", content: secret }] },
  { workflow: `mail alice@example.com ${secret}`, tenant: "acme", messages: [{ _tag: "user", content: "hi" }] },
  { workflow: "support.reply", tenant: "acme", messages: [{ _tag: "user", content: "hi" }], step: secret }
]

describe("ModelCommand decoding errors never echo input values", () => {
  it("Schema.decodeSync, decodeUnknownEither and validateSync of the class", () => {
    for (const input of hostile) {
      let message = ""
      try {
        Schema.decodeUnknownSync(ModelCommand)(input)
        assert.fail("decoded")
      } catch (e) {
        message = String(e instanceof Error ? e.message : e)
      }
      assert.notInclude(message, "SECRET")
      assert.include(message, "invalid command")
      assert.notInclude(message, "alice@")
      const either = Schema.decodeUnknownEither(ModelCommand)(input)
      assert.isTrue(Either.isLeft(either))
      if (Either.isLeft(either)) {
        assert.notInclude(either.left.message, "SECRET")
        assert.notInclude(String(either.left), "SECRET")
      }
    }
  })

  it("validate (the type side) of a built-in-code instance with a bad field", () => {
    const valid = Schema.decodeUnknownSync(ModelCommand)({
      workflow: "support.reply",
      tenant: "acme",
      messages: [{ _tag: "user", content: "hi" }]
    })
    const either = Schema.validateEither(ModelCommand)({ ...valid, tenant: `acme ${secret}` })
    assert.isTrue(Either.isLeft(either))
    if (Either.isLeft(either)) assert.notInclude(either.left.message, "SECRET")
  })
})
