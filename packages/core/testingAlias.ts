/**
 * `@modelgate/testing` depends on `@modelgate/core`, so core's own tests reach the test kit through
 * this alias (and `paths` in `tsconfig.test.json`) rather than a dev dependency that would make the
 * workspace cyclic.
 */
import { fileURLToPath } from "node:url"

const src = fileURLToPath(new URL("../testing/src/", import.meta.url))

export const testingAlias = [
  { find: /^@modelgate\/testing$/, replacement: `${src}index.ts` },
  { find: /^@modelgate\/testing\/(.*)$/, replacement: `${src}$1.ts` }
]
