/**
 * `ToolLedgerStore` on Redis: `claim` sets the record only if its key is free (one script);
 * records are kept for the retention given.
 *
 * @internal
 */
import type { StoreError } from "@modelgate/core/Errors"
import * as ToolLedgerStore from "@modelgate/core/ToolLedgerStore"
import { Effect, Option, Schema } from "effect"
import { bad, type Client, int, storeError } from "./client.js"
import type { Epoch } from "./epoch.js"
import { guarded } from "./epoch.js"
import * as LedgerScripts from "./ledgerScripts.js"

const decodeToolRecord = Schema.decodeUnknownOption(ToolLedgerStore.ToolRecord)

const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

/** A record from its stored fields `[m, s, c, r]`. */
const toRecord = (fields: unknown): ToolLedgerStore.ToolRecord | typeof bad => {
  if (!Array.isArray(fields) || fields.length !== 4) return bad
  const [m, s, c, r] = fields
  if (typeof m !== "string" || typeof s !== "string") return bad
  const meta = parseJson(m)
  if (Option.isNone(meta) || typeof meta.value !== "object" || meta.value === null) return bad
  const result = typeof r === "string" ? parseJson(r) : Option.none()
  if (typeof r === "string" && Option.isNone(result)) return bad
  const record = decodeToolRecord({
    ...meta.value,
    status: s,
    ...(typeof c === "string" ? { completedAt: Number(c) } : {}),
    ...(Option.isSome(result) ? { result: result.value } : {})
  })
  return Option.isSome(record) ? record.value : bad
}

/** @internal */
export const makeToolLedgerStore = (
  client: Client,
  prefix: string,
  retentionMillis: number,
  epoch?: Epoch
): ToolLedgerStore.Service => {
  // After Redis came back empty, claims fail closed until the loss is acknowledged.
  const checked = <A>(effect: Effect.Effect<A, StoreError>) =>
    epoch === undefined ? effect : guarded(epoch, "claim", effect)
  const recordPrefix = `${prefix}ledger:`
  const runKey = (runId: string) => `${prefix}ledger-run:${runId}`
  return ToolLedgerStore.ToolLedgerStore.of({
    claim: (record) =>
      checked(
        client.script(
          "ledger",
          "claim",
          LedgerScripts.ledgerClaim,
          [recordPrefix + record.key, runKey(record.runId), `${prefix}ledger-seq`],
          [
            JSON.stringify({
              key: record.key,
              runId: record.runId,
              step: record.step,
              index: record.index,
              tool: record.tool,
              startedAt: record.startedAt
            }),
            int(retentionMillis),
            record.key
          ],
          (reply): ToolLedgerStore.ClaimOutcome | typeof bad => {
            if (Array.isArray(reply) && reply.length === 0) return { _tag: "Claimed" }
            const existing = toRecord(reply)
            return existing === bad ? bad : { _tag: "Existing", record: existing }
          }
        )
      ),
    complete: (key, result, completedAt) =>
      Effect.flatMap(
        Effect.try({
          try: () => (result === undefined ? "" : JSON.stringify(result)),
          catch: () => storeError("ledger", "complete", "result not JSON")
        }),
        (json) =>
          client.script(
            "ledger",
            "complete",
            LedgerScripts.ledgerComplete,
            [recordPrefix + key],
            [json, String(completedAt)],
            (reply) => (typeof reply === "number" ? undefined : bad)
          )
      ),
    release: (key) =>
      Effect.flatMap(
        client.command(
          "ledger",
          "release",
          (r) => r.hget(recordPrefix + key, "m"),
          (reply) => (reply === null ? Option.none() : typeof reply === "string" ? parseJson(reply) : bad)
        ),
        (meta) => {
          const runId =
            Option.isSome(meta) && typeof meta.value === "object" && meta.value !== null && "runId" in meta.value
              ? meta.value.runId
              : undefined
          if (typeof runId !== "string") return Effect.void
          return client.script(
            "ledger",
            "release",
            LedgerScripts.ledgerRelease,
            [recordPrefix + key, runKey(runId)],
            [key],
            (reply) => (typeof reply === "number" ? undefined : bad)
          )
        }
      ),
    get: (key) =>
      client.command(
        "ledger",
        "get",
        (r) => r.hmget(recordPrefix + key, "m", "s", "c", "r"),
        (reply): Option.Option<ToolLedgerStore.ToolRecord> | typeof bad => {
          if (Array.isArray(reply) && reply[0] === null) return Option.none()
          const record = toRecord(reply)
          return record === bad ? bad : Option.some(record)
        }
      ),
    list: (runId) =>
      client.script(
        "ledger",
        "list",
        LedgerScripts.ledgerList,
        [runKey(runId)],
        [recordPrefix],
        (reply): ReadonlyArray<ToolLedgerStore.ToolRecord> | typeof bad => {
          if (!Array.isArray(reply)) return bad
          const records: Array<ToolLedgerStore.ToolRecord> = []
          for (const fields of reply) {
            const record = toRecord(fields)
            if (record === bad) return bad
            records.push(record)
          }
          return records
        }
      )
  })
}
