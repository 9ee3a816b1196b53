/**
 * The cache stage of the pipeline (a workflow with `cache` only), before routing and admission:
 *
 * - a hit returns the stored envelope with a new call id and the evidence `cache: { hit: true,
 *   ageMs, keyId, callId }`: no route, no reservation, no permit, no provider call, no spend;
 * - a miss (or `refresh`) runs the call and stores its answer when it is storable: a success with
 *   `finishReason` `stop` or `tool_calls`, valid, not degraded, served under the key's versions;
 * - `bypass` (the command's, or a command offering side-effecting tools) neither reads nor stores.
 *
 * The stored form is the envelope encoded with its Schema (the structured value encoded with the
 * workflow's output schema), without attempt records; a store in this process's memory keeps the
 * decoded answer beside it (a hit then decodes nothing; every hit shares that readonly value). A
 * stored answer that no longer decodes is a miss (`error`).
 */
import { Duration, Effect, Either, type ParseResult, Schema } from "effect"
import type { Failure } from "../../Errors.js"
import { type CacheEvidence, type Evidence, ModelResult, Usage } from "../../ModelResult.js"
import type * as ResponseCache from "../../ResponseCache.js"
import type { ModelCommand } from "../../ModelCommand.js"
import { type CachePolicy, unversioned, type Workflow } from "../../Workflow.js"
import type { Call, EngineContext } from "../call.js"
import { globalScope, type KeyInput, tenantScope } from "./key.js"

/** The encoded envelope, as JSON text (one Schema at the edge of the store). */
const Stored = Schema.parseJson(ModelResult)
const encodeStored = Schema.encodeEither(Stored)
const decodeStored = Schema.decodeUnknownEither(Stored)

/** The command's fields that decide the answer besides the scope, the versions, the messages and the tools. */
const samplingFields = [
  "options",
  "providerOptions",
  "toolChoice",
  "maxOutputTokens",
  "regions",
  "dataClass",
  "requires",
  "risk",
  "segment",
  "preferredTier",
  "minQualityTier",
  "escalate"
] as const satisfies ReadonlyArray<keyof ModelCommand>

/**
 * What decides the answer besides the scope and the versions: the sampling and output options and
 * everything that changes which target answers. Never the deadline, the cost cap or the session.
 * Only the fields the command sets (the key's encoding leaves absent members out either way), so
 * that a command setting none of them encodes `{}` without sorting a dozen absent keys.
 */
const samplingOf = (call: Call): Partial<Record<(typeof samplingFields)[number], unknown>> => {
  const c = call.command
  const sampling: Partial<Record<(typeof samplingFields)[number], unknown>> = {}
  for (const field of samplingFields) {
    const value = c[field]
    if (value !== undefined) sampling[field] = value
  }
  return sampling
}

/**
 * A version for the key: an unversioned policy or prompt is keyed by the configuration's version
 * too, so that a changed configuration never serves an old answer.
 */
const versioned = (version: string, call: Call) =>
  version === unversioned ? `${version}@${call.config.version}` : version

/** The key input of the call (the one key function, `key.ts`, hashes it). */
export const keyInputOf = (call: Call, w: Workflow, policy: CachePolicy): KeyInput => ({
  scope: policy.scope === "global" ? globalScope : tenantScope(call.command.tenant),
  workflow: w.name,
  policyVersion: versioned(w.policyVersion, call),
  promptVersion: versioned(w.prompt.version, call),
  schemaVersion: w.output?.schemaVersion,
  sampling: samplingOf(call),
  messages: call.command.messages,
  tools: call.command.tools
})

/** The envelope with `cache` in its evidence; it becomes the call's result (and CallRecord). */
const withCache = (call: Call, result: ModelResult, cache: CacheEvidence): ModelResult => {
  const r = new ModelResult(
    { content: result.content, finishReason: result.finishReason, evidence: { ...result.evidence, cache } },
    { disableValidation: true }
  )
  call.holds.result = r
  return r
}

/** Whether `result` may be stored under a key made with `input`'s versions. */
const storable = (result: ModelResult, input: KeyInput): boolean => {
  const e = result.evidence
  return (
    (result.finishReason === "stop" || result.finishReason === "tool_calls") &&
    !e.degraded &&
    e.schemaValid !== false &&
    // A policy or prompt canary's candidate side answers under other versions than the key's.
    versionOf(e.policyVersion, input.policyVersion) &&
    versionOf(e.promptVersion, input.promptVersion)
  )
}

const versionOf = (evidence: string, keyed: string) =>
  keyed === evidence || (evidence === unversioned && keyed.startsWith(`${unversioned}@`))

/** What a store in this process's memory keeps beside the encoded form: the answer without attempt records. */
const kept = (result: ModelResult): ModelResult =>
  new ModelResult(
    {
      content: result.content,
      finishReason: result.finishReason,
      evidence: { ...result.evidence, attempts: [], cache: undefined }
    },
    { disableValidation: true }
  )

/** The stored form of `result`: its value encoded with the output schema, no attempt records. */
const encode = (call: Call, result: ModelResult): string | undefined => {
  const schema = call.compiled?.schema
  const value = result.content.value
  const encodedValue =
    schema === undefined || value === undefined ? Either.right(value) : Schema.encodeUnknownEither(schema)(value)
  if (Either.isLeft(encodedValue)) return undefined
  const e = result.evidence
  const stored = new ModelResult(
    {
      content: { ...result.content, value: encodedValue.right },
      finishReason: result.finishReason,
      evidence: { ...e, attempts: [], cache: undefined }
    },
    { disableValidation: true }
  )
  return Either.getOrUndefined(encodeStored(stored))
}

/** The envelope of a hit, or `undefined` when the stored form no longer decodes. */
const decode = (call: Call, hit: ResponseCache.Hit): ModelResult | undefined => {
  // A store in this process's memory hands back the answer it was given: nothing to decode.
  const inMemory = hit.decoded instanceof ModelResult ? hit.decoded : undefined
  const stored = inMemory === undefined ? decodeStored(hit.value) : Either.right(inMemory)
  if (Either.isLeft(stored)) return undefined
  const s = stored.right
  const decodeValue = call.compiled?.decode
  let value = s.content.value
  if (inMemory === undefined && decodeValue !== undefined && value !== undefined) {
    const decoded: Either.Either<unknown, ParseResult.ParseError> = decodeValue(value)
    if (Either.isLeft(decoded)) return undefined
    value = decoded.right
  }
  const at = call.clock.unsafeCurrentTimeMillis()
  const o = s.evidence
  const evidence: Evidence = {
    ...o,
    callId: call.id,
    configVersion: call.config.version,
    eligible: [],
    excluded: [],
    routeId: undefined,
    selectionReason: undefined,
    escalations: undefined,
    scores: undefined,
    canary: undefined,
    fallbackUsed: false,
    degraded: false,
    attempts: [],
    retryCount: 0,
    retryBudgetExhausted: false,
    startedAt: call.startedAt,
    totalLatencyMs: at - call.startedAt,
    usage: Usage.zero,
    cost: { currency: "USD", estimated: undefined, reserved: 0, actual: 0, overspent: undefined },
    runId: call.runId,
    step: call.step,
    embedding: undefined,
    cache: { hit: true, lookup: "hit", keyId: hit.keyId, ageMs: hit.ageMs, callId: o.callId, bytes: hit.value.length }
  }
  const r = new ModelResult(
    { content: { ...s.content, value }, finishReason: s.finishReason, evidence },
    { disableValidation: true }
  )
  call.holds.result = r
  return r
}

/**
 * Runs `run` (routing, admission, attempts) through the response cache of `policy`. `run` is only
 * started on a miss; a hit answers without it.
 */
export const cached = (
  ctx: EngineContext,
  call: Call,
  w: Workflow,
  policy: CachePolicy,
  run: () => Effect.Effect<ModelResult, Failure>
): Effect.Effect<ModelResult, Failure> => {
  const cache = ctx.cache
  if (cache === undefined) return run()
  const cmd = call.command
  if (cmd.cache === "bypass" || cmd.allowsStateChangingTools) {
    cache.unsafeCount(w.name, "bypass", undefined)
    return Effect.map(run(), (result) => withCache(call, result, { hit: false, lookup: "bypass" }))
  }
  const input = keyInputOf(call, w, policy)
  const onMiss = (
    keyId: string,
    save: (value: string, decoded?: unknown) => Effect.Effect<boolean>,
    lookup: ResponseCache.Lookup
  ): Effect.Effect<ModelResult, Failure> =>
    Effect.flatMap(run(), (result) => {
      const encoded = storable(result, input) ? encode(call, result) : undefined
      const saved = encoded === undefined ? Effect.succeed(false) : save(encoded, kept(result))
      return Effect.map(saved, (stored) => {
        const bytes = stored ? encoded?.length : undefined
        cache.unsafeCount(w.name, lookup, bytes)
        return withCache(call, result, { hit: false, lookup, keyId, stored, bytes })
      })
    })
  return cache.cached(
    input,
    { until: call.deadline, ttlMs: Duration.toMillis(policy.ttl), refresh: cmd.cache === "refresh" },
    (hit) =>
      Effect.suspend(() => {
        const r = decode(call, hit)
        if (r !== undefined) {
          cache.unsafeCount(w.name, "hit", hit.value.length)
          return Effect.succeed(r)
        }
        // A stored form this version cannot read: a normal call (not stored; the entry expires).
        return onMiss(hit.keyId, () => Effect.succeed(false), "error")
      }),
    onMiss
  )
}
