/**
 * The engine's side of module `ModelOptions`: a workflow's bounds checked and pinned options, a
 * call's options resolved from the workflow's bounds and the command's overrides, what each target
 * is sent, and what evidence records; plus the checks behind `ModelOptions.providerOptionsProblems`.
 */
import { Either } from "effect"
import type {
  OptionName,
  OptionsEvidence,
  ProviderOptions,
  RequestOptions,
  ResolvedOptions,
  WorkflowOptions
} from "../ModelOptions.js"

import { names } from "./optionFacts.js"

type MutableOptions = { -readonly [K in keyof RequestOptions]: RequestOptions[K] }

// ---------------------------------------------------------------------------------------------
// Workflow bounds
// ---------------------------------------------------------------------------------------------

type Range =
  | number
  | { readonly default?: number | undefined; readonly min?: number | undefined; readonly max?: number | undefined }
type ChoiceBounds<A> = { readonly default?: A | undefined; readonly allowed?: ReadonlyArray<A> | undefined }
type Choice<A> = A | ChoiceBounds<A>

/** The bounds of a choice, a bare value read as the one allowed value. */
const choiceBounds = <A extends string | boolean>(b: Choice<A>): ChoiceBounds<A> =>
  typeof b === "string" || typeof b === "boolean" ? { default: b, allowed: [b] } : b
type Fixed<A> = { readonly default?: A | undefined; readonly overridable?: boolean | undefined }

const isPinnedRange = (b: Range | undefined): boolean =>
  b !== undefined && (typeof b === "number" || (b.min !== undefined && b.min === b.max))
const isPinnedChoice = <A extends string | boolean>(b: Choice<A> | undefined): boolean =>
  b !== undefined && choiceBounds(b).allowed?.length === 1
const isPinnedFixed = <A>(b: Fixed<A> | undefined): boolean =>
  b !== undefined && b.default !== undefined && b.overridable === false

/**
 * The options a workflow pins: every route target must accept them (checked at startup).
 */
export const pinned = (bounds: WorkflowOptions | undefined): ReadonlyArray<OptionName> => {
  if (bounds === undefined) return []
  const out: Array<OptionName> = []
  if (isPinnedRange(bounds.temperature)) out.push("temperature")
  if (isPinnedRange(bounds.topP)) out.push("topP")
  if (isPinnedRange(bounds.seed)) out.push("seed")
  if (isPinnedFixed(bounds.stop)) out.push("stop")
  if (isPinnedChoice(bounds.reasoningEffort)) out.push("reasoningEffort")
  if (isPinnedRange(bounds.reasoningBudget)) out.push("reasoningBudget")
  if (isPinnedChoice(bounds.parallelToolCalls)) out.push("parallelToolCalls")
  if (isPinnedRange(bounds.presencePenalty)) out.push("presencePenalty")
  if (isPinnedRange(bounds.frequencyPenalty)) out.push("frequencyPenalty")
  if (isPinnedFixed(bounds.userId)) out.push("userId")
  return out
}

/**
 * Problems of a workflow's bounds in themselves (a minimum above the maximum, a default outside the
 * range or the allowed values), as `[option, detail]` pairs; empty when consistent.
 */
export const boundsProblems = (bounds: WorkflowOptions | undefined): ReadonlyArray<readonly [OptionName, string]> => {
  if (bounds === undefined) return []
  const out: Array<readonly [OptionName, string]> = []
  const range = (name: OptionName, b: Range | undefined) => {
    if (b === undefined || typeof b === "number") return
    if (b.min !== undefined && b.max !== undefined && b.min > b.max) out.push([name, "min is above max"])
    if (b.default !== undefined && b.min !== undefined && b.default < b.min) out.push([name, "default is below min"])
    if (b.default !== undefined && b.max !== undefined && b.default > b.max) out.push([name, "default is above max"])
  }
  const choice = <A extends string | boolean>(name: OptionName, given: Choice<A> | undefined) => {
    if (given === undefined) return
    const b = choiceBounds(given)
    if (b.default !== undefined && b.allowed !== undefined && !b.allowed.includes(b.default)) {
      out.push([name, "default is not among the allowed values"])
    }
  }
  range("temperature", bounds.temperature)
  range("topP", bounds.topP)
  range("seed", bounds.seed)
  choice("reasoningEffort", bounds.reasoningEffort)
  range("reasoningBudget", bounds.reasoningBudget)
  choice("parallelToolCalls", bounds.parallelToolCalls)
  range("presencePenalty", bounds.presencePenalty)
  range("frequencyPenalty", bounds.frequencyPenalty)
  return out
}

// ---------------------------------------------------------------------------------------------
// Provider options
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

/**
 * No options: what a call resolves to when neither the workflow nor the command sets any.
 */
export const none: ResolvedOptions = { values: {}, required: [], providerOptions: undefined }

const describe = (v: number) => String(v)

/** A command value against numeric bounds: the value to use, or a problem. */
const pickRange = (
  name: OptionName,
  b: Range | undefined,
  v: number | undefined,
  required: Array<OptionName>
): number | string | undefined => {
  if (b === undefined) {
    if (v !== undefined) required.push(name)
    return v
  }
  const min = typeof b === "number" ? b : b.min
  const max = typeof b === "number" ? b : b.max
  const fallback = typeof b === "number" ? b : b.default
  if (min !== undefined && min === max) required.push(name)
  else if (v !== undefined) required.push(name)
  if (v === undefined) return fallback
  if (min !== undefined && min === max && v !== min)
    return `options.${name} is pinned by the workflow to ${describe(min)}`
  if (min !== undefined && v < min) return `options.${name} is below the workflow's minimum of ${describe(min)}`
  if (max !== undefined && v > max) return `options.${name} is above the workflow's maximum of ${describe(max)}`
  return v
}

const pickChoice = <A extends string | boolean>(
  name: OptionName,
  b: Choice<A> | undefined,
  v: A | undefined,
  required: Array<OptionName>
): { readonly value: A | undefined } | string => {
  if (b === undefined) {
    if (v !== undefined) required.push(name)
    return { value: v }
  }
  const { allowed, default: fallback } = choiceBounds(b)
  if (allowed?.length === 1 || v !== undefined) required.push(name)
  if (v === undefined) return { value: fallback }
  if (allowed !== undefined && !allowed.includes(v)) {
    return `options.${name} is not among the workflow's allowed values [${allowed.map(String).join(", ")}]`
  }
  return { value: v }
}

const pickFixed = <A>(
  name: OptionName,
  b: Fixed<A> | undefined,
  v: A | undefined,
  required: Array<OptionName>
): { readonly value: A | undefined } | string => {
  if (v !== undefined) {
    if (b?.overridable === false) return `options.${name} is fixed by the workflow`
    required.push(name)
    return { value: v }
  }
  if (isPinnedFixed(b)) required.push(name)
  return { value: b?.default }
}

const mergeProviderOptions = (
  workflow: ProviderOptions | undefined,
  command: ProviderOptions | undefined
): ProviderOptions | string | undefined => {
  if (command === undefined) return workflow
  if (workflow === undefined) return command
  const out: Record<string, Readonly<Record<string, unknown>>> = { ...workflow }
  for (const [provider, fields] of Object.entries(command)) {
    const fixed = Object.hasOwn(workflow, provider) ? workflow[provider] : undefined
    if (fixed === undefined) {
      out[provider] = fields
      continue
    }
    for (const field of Object.keys(fields)) {
      if (Object.hasOwn(fixed, field)) {
        return `providerOptions.${provider.slice(0, 100)}.${field.slice(0, 64)} is set by the workflow`
      }
    }
    out[provider] = { ...fixed, ...fields }
  }
  return out
}

/**
 * Resolves a command's options and provider options against its workflow's: the values to send
 * and which of them are required, or a value-free problem (`options.temperature is above the
 * workflow's maximum of 1`) that makes the call `InvalidRequest`.
 */
export const resolve = (
  workflow: {
    readonly options?: WorkflowOptions | undefined
    readonly providerOptions?: ProviderOptions | undefined
  },
  command: {
    readonly options?: RequestOptions | undefined
    readonly providerOptions?: ProviderOptions | undefined
  }
): Either.Either<ResolvedOptions, string> => {
  const b = workflow.options
  const r = command.options
  if (b === undefined && r === undefined && workflow.providerOptions === undefined) {
    return command.providerOptions === undefined
      ? Either.right(none)
      : Either.right({ values: {}, required: [], providerOptions: command.providerOptions })
  }
  const required: Array<OptionName> = []
  const values: MutableOptions = {}
  const problems: Array<string> = []
  const range = (name: OptionName, bound: Range | undefined, v: number | undefined): number | undefined => {
    const picked = pickRange(name, bound, v, required)
    if (typeof picked === "string") {
      problems.push(picked)
      return undefined
    }
    return picked
  }
  const unwrap = <A>(picked: { readonly value: A | undefined } | string): A | undefined => {
    if (typeof picked === "string") {
      problems.push(picked)
      return undefined
    }
    return picked.value
  }
  const temperature = range("temperature", b?.temperature, r?.temperature)
  if (temperature !== undefined) values.temperature = temperature
  const topP = range("topP", b?.topP, r?.topP)
  if (topP !== undefined) values.topP = topP
  const seed = range("seed", b?.seed, r?.seed)
  if (seed !== undefined) values.seed = seed
  const stop = unwrap(pickFixed("stop", b?.stop, r?.stop, required))
  if (stop !== undefined) values.stop = stop
  const effort = unwrap(pickChoice("reasoningEffort", b?.reasoningEffort, r?.reasoningEffort, required))
  if (effort !== undefined) values.reasoningEffort = effort
  const budget = range("reasoningBudget", b?.reasoningBudget, r?.reasoningBudget)
  if (budget !== undefined) values.reasoningBudget = budget
  const parallel = unwrap(pickChoice("parallelToolCalls", b?.parallelToolCalls, r?.parallelToolCalls, required))
  if (parallel !== undefined) values.parallelToolCalls = parallel
  const presence = range("presencePenalty", b?.presencePenalty, r?.presencePenalty)
  if (presence !== undefined) values.presencePenalty = presence
  const frequency = range("frequencyPenalty", b?.frequencyPenalty, r?.frequencyPenalty)
  if (frequency !== undefined) values.frequencyPenalty = frequency
  const userId = unwrap(pickFixed("userId", b?.userId, r?.userId, required))
  if (userId !== undefined) values.userId = userId
  const providerOptions = mergeProviderOptions(workflow.providerOptions, command.providerOptions)
  if (typeof providerOptions === "string") problems.push(providerOptions)
  if (problems.length > 0) return Either.left(problems.join("; "))
  return Either.right({
    values,
    required,
    providerOptions: typeof providerOptions === "string" ? undefined : providerOptions
  })
}

/**
 * The required options `accepted` (a target's `capabilities.options`) lacks, or `undefined` when
 * it accepts them all. Allocates only when one is missing.
 */
export const unsupported = (
  required: ReadonlyArray<OptionName>,
  accepted: ReadonlyArray<OptionName>
): Array<OptionName> | undefined => {
  let missing: Array<OptionName> | undefined
  for (const name of required) {
    if (accepted.includes(name)) continue
    if (missing === undefined) missing = []
    missing.push(name)
  }
  return missing
}

/**
 * The options to send to a target that accepts `accepted` (its `capabilities.options`; omitted:
 * none): the resolved values without the workflow defaults it does not accept (required options it
 * lacks keep it out of the route). The resolved values themselves when it accepts them all.
 */
export const forTarget = (
  resolved: ResolvedOptions,
  accepted: ReadonlyArray<OptionName> | undefined
): RequestOptions => {
  const values = resolved.values
  if (resolved === none) return values
  let out: MutableOptions | undefined
  for (const name of names) {
    if (values[name] === undefined || accepted?.includes(name)) continue
    if (out === undefined) out = { ...values }
    delete out[name]
  }
  return out ?? values
}

/**
 * The wire fields of `provider` in the resolved provider options, if any.
 */
export const forProvider = (
  resolved: ResolvedOptions,
  provider: string
): Readonly<Record<string, unknown>> | undefined => {
  const all = resolved.providerOptions
  return all !== undefined && Object.hasOwn(all, provider) ? all[provider] : undefined
}

// ---------------------------------------------------------------------------------------------
// Evidence
// ---------------------------------------------------------------------------------------------

/**
 * The evidence of the options sent to `target` (those of the answer), or of the resolved options
 * when no target answered; `undefined` when none were set.
 */
export const evidenceOf = (
  resolved: ResolvedOptions | undefined,
  target:
    | { readonly provider: string; readonly capabilities: { readonly options?: ReadonlyArray<OptionName> | undefined } }
    | undefined
): OptionsEvidence | undefined => {
  if (resolved === undefined || resolved === none) return undefined
  const values = target === undefined ? resolved.values : forTarget(resolved, target.capabilities.options)
  const { userId, ...rest } = values
  const fields: Array<string> = []
  const providers = resolved.providerOptions ?? {}
  for (const [provider, given] of Object.entries(providers)) {
    if (target !== undefined && provider !== target.provider) continue
    for (const field of Object.keys(given)) fields.push(`${provider}.${field}`)
  }
  const out: OptionsEvidence = {
    ...rest,
    ...(userId !== undefined ? { userId: "set" as const } : {}),
    ...(fields.length > 0 ? { providerOptions: fields } : {})
  }
  return Object.keys(out).length === 0 ? undefined : out
}
