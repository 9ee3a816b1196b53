/**
 * Virtual API keys: only SHA-256 digests are held. A presented key is hashed once (one-shot
 * `crypto.hash` where Node has it, 20.12+); its hex digest finds the entry in a map (one lookup,
 * however many keys — what a lookup's timing could tell is about a digest, which does not lead back
 * to a key), and the stored digest is then compared with it in constant time
 * (`crypto.timingSafeEqual`). No presented key is kept. A key names its tenant and the workflows it
 * may call.
 *
 * @since 0.1.0
 */
import * as Crypto from "node:crypto"
import type { ApiKey } from "./ServerConfig.js"

/**
 * SHA-256 of a key, lower-case hex: what the configuration stores.
 *
 * @since 0.1.0
 * @category Utils
 */
export const hashKey: (key: string) => string =
  // `crypto.hash` (Node 20.12+) skips the Hash object: about a third of `createHash`'s cost.
  typeof Crypto.hash === "function"
    ? (key) => Crypto.hash("sha256", key, "hex")
    : (key) => Crypto.createHash("sha256").update(key, "utf8").digest("hex")

/**
 * A fresh random key (`mg-` and 32 bytes in base64url).
 *
 * @since 0.1.0
 * @category Utils
 */
export const generateKey = (): string => `mg-${Crypto.randomBytes(32).toString("base64url")}`

/** Longest key accepted (a longer bearer token is refused before hashing). */
export const maxKeyLength = 512

/**
 * The keys of one configuration.
 *
 * @since 0.1.0
 * @category Models
 */
export interface KeyRing {
  /** The key entry `presented` matches, if any. */
  readonly verify: (presented: string) => ApiKey | undefined
  /** True when `key` may call `workflow` (a resolved workflow name). */
  readonly allows: (key: ApiKey, workflow: string) => boolean
}

/**
 * Builds a key ring; aliases in a key's `workflows` are resolved to workflow names.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeKeyRing = (keys: ReadonlyArray<ApiKey>, aliases: Readonly<Record<string, string>>): KeyRing => {
  const byDigest = new Map<string, { readonly key: ApiKey; readonly digest: Buffer }>()
  for (const key of keys) {
    const hex = key.sha256.toLowerCase()
    if (!byDigest.has(hex)) byDigest.set(hex, { key, digest: Buffer.from(hex, "hex") })
  }
  const allowed = new Map(keys.map((key) => [key.id, new Set(key.workflows.map((w) => aliases[w] ?? w))]))
  return {
    verify: (presented) => {
      if (presented.length === 0 || presented.length > maxKeyLength) return undefined
      const hex = hashKey(presented)
      const entry = byDigest.get(hex)
      return entry !== undefined && Crypto.timingSafeEqual(entry.digest, Buffer.from(hex, "hex"))
        ? entry.key
        : undefined
    },
    allows: (key, workflow) => {
      const set = allowed.get(key.id)
      return set !== undefined && (set.has("*") || set.has(workflow))
    }
  }
}

/**
 * The bearer token of an `Authorization` header (or `undefined`).
 *
 * @since 0.1.0
 * @category Utils
 */
export const bearerOf = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}
