/**
 * Resolution shared by every vitest project: the workspace packages export their TypeScript sources
 * under the custom `source` condition (and the compiled `dist/` otherwise), so tests run against the
 * sources without a build. Vitest's own server conditions for Node follow it (vite's defaults without
 * `module`, which would pick packages' bundler-only ESM builds).
 */
export const sourceConditions = ["source", "node", "development|production"]

export const sourceResolve = {
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } }
}
