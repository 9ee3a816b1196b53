/**
 * Input-token estimation with a real tokenizer (`gpt-tokenizer`, o200k_base), applied to everything
 * that is sent: messages, tool definitions and the output JSON Schema.
 *
 * @since 0.1.0
 */
import { countTokens } from "gpt-tokenizer"
import type { Message, ToolDefinition } from "./ModelCommand.js"

/** Tokens a chat format adds around each message (role markers). @internal */
const perMessageOverhead = 4
/** Flat estimate for one image part (providers bill images by tiles; this is a conservative mid value). @internal */
export const imageTokens = 1_000

/**
 * Tokens of one text.
 *
 * @since 0.1.0
 * @category Utils
 */
export const countText = (text: string): number => (text.length === 0 ? 0 : countTokens(text))

/**
 * Estimated input tokens of a request, before any per-target safety factor.
 *
 * @since 0.1.0
 * @category Utils
 */
export const estimateInput = (input: {
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  readonly outputJsonSchema?: Record<string, unknown> | undefined
}): number => {
  let total = 3
  for (const m of input.messages) {
    total += perMessageOverhead
    switch (m._tag) {
      case "system":
      case "tool":
        total += countText(m.content)
        break
      case "assistant":
        if (m.content) total += countText(m.content)
        for (const call of m.toolCalls ?? []) total += countText(call.name) + countText(call.arguments)
        break
      case "user":
        if (typeof m.content === "string") total += countText(m.content)
        else for (const p of m.content) total += p._tag === "text" ? countText(p.text) : imageTokens
        break
    }
  }
  for (const tool of input.tools ?? []) {
    total += countText(
      JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters })
    )
  }
  if (input.outputJsonSchema) total += countText(JSON.stringify(input.outputJsonSchema))
  return total
}
