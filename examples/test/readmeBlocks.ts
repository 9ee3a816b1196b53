/** Blocks of the root README that tests compare with files and run. */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

/** A file relative to examples/test. */
export const read = (relative: string) => readFileSync(fileURLToPath(new URL(relative, import.meta.url)), "utf8")

/** The first program as the README shows it, between `<!-- first-call:start -->` and `<!-- first-call:end -->`. */
export const firstCallBlock = (): string | undefined =>
  /<!-- first-call:start -->\n```ts\n([\s\S]*?)```\n<!-- first-call:end -->/.exec(read("../../README.md"))?.[1]
