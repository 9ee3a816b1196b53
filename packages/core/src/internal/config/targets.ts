/**
 * Startup checks of the targets: unique refs, finite and consistent attempt limits, catalogue
 * references, and an adapter for every provider that serves traffic.
 */
import * as Duration from "effect/Duration"
import * as Catalogue from "../../Catalogue.js"
import type { ModelTarget } from "../../ModelTarget.js"
import { maxDuration } from "../fieldSchemas.js"
import { type Add, listOf } from "./problems.js"

/** A duration beyond 24 h or infinite (possible only for a config built without validation). */
export const tooLong = (d: Duration.Duration | undefined): boolean =>
  d !== undefined && (!Duration.isFinite(d) || Duration.greaterThan(d, maxDuration))

/** Detail of a `DURATION_TOO_LONG` problem. */
export const tooLongDetail = "must be finite and at most 24 h (86400000 ms)"

/** Milliseconds of `d` for a detail. */
export const ms = (d: Duration.Duration): string => `${Duration.toMillis(d)} ms`

const limitKeys = ["perAttemptTimeout", "ttftTimeout", "streamIdleTimeout", "minimumAttemptTime"] as const

/** The attempt limits of one target: finite, positive, the minimum within the per-attempt timeout. */
const checkLimits = (t: ModelTarget, path: string, add: Add): void => {
  const l = t.limits
  const at = (key: string, reason: string, detail: string, fix?: string) =>
    add({ path: `${path}.limits.${key}`, target: t.ref, reason, detail, fix })
  for (const key of limitKeys) {
    if (tooLong(l[key])) at(key, "DURATION_TOO_LONG", tooLongDetail)
  }
  for (const key of ["perAttemptTimeout", "minimumAttemptTime", "ttftTimeout", "streamIdleTimeout"] as const) {
    const d = l[key]
    if (d !== undefined && Duration.toMillis(d) <= 0) at(key, "NON_POSITIVE_TIMEOUT", `must be > 0, got ${ms(d)}`)
  }
  if (Duration.greaterThan(l.minimumAttemptTime, l.perAttemptTimeout)) {
    at(
      "minimumAttemptTime",
      "MINIMUM_EXCEEDS_PER_ATTEMPT",
      `minimumAttemptTime ${ms(l.minimumAttemptTime)} exceeds perAttemptTimeout ${ms(l.perAttemptTimeout)}`,
      `lower limits.minimumAttemptTime to at most ${ms(l.perAttemptTimeout)}, or raise limits.perAttemptTimeout`
    )
  }
}

/** The catalogue fields of a target built in code (decoding checks those read from JSON). */
const checkCatalogue = (t: ModelTarget, path: string, add: Add): void => {
  if (t.catalogue !== undefined && !Catalogue.isId(t.catalogue)) {
    add({
      path: `${path}.catalogue`,
      target: t.ref,
      reason: "UNKNOWN_CATALOGUE_ENTRY",
      detail: `no entry with this id in catalogue ${Catalogue.version}`
    })
  }
  if (t.catalogueVersion !== undefined && (t.catalogue === undefined || t.catalogueVersion !== Catalogue.version)) {
    add({
      path: `${path}.catalogueVersion`,
      target: t.ref,
      reason: "CATALOGUE_VERSION_MISMATCH",
      detail:
        t.catalogue === undefined
          ? "catalogueVersion needs a catalogue entry (catalogue)"
          : `this release ships catalogue ${Catalogue.version}`,
      fix:
        t.catalogue === undefined
          ? "name a catalogue entry, or remove catalogueVersion"
          : `check the entry's figures, then set catalogueVersion to "${Catalogue.version}"`
    })
  }
}

/**
 * Checks target `i` against those before it (`byRef`, which it joins: of a duplicated ref the last
 * one, the copy reported).
 */
export const checkTarget = (
  t: ModelTarget,
  i: number,
  byRef: Map<string, ModelTarget>,
  providers: ReadonlySet<string>,
  add: Add
): void => {
  const path = `targets[${i}]`
  if (byRef.has(t.ref)) add({ path, target: t.ref, reason: "DUPLICATE_TARGET", detail: "ref defined twice" })
  byRef.set(t.ref, t)
  checkLimits(t, path, add)
  checkCatalogue(t, path, add)
  if (t.status !== "disabled" && !providers.has(t.provider)) {
    add({
      path: `${path}.provider`,
      target: t.ref,
      reason: "NO_ADAPTER",
      detail: `no adapter provided for provider "${t.provider}"; adapters provided: ${listOf([...providers].sort())}`,
      fix: `provide the adapter layer of provider "${t.provider}" to the gateway, or set the target's status to "disabled"`
    })
  }
}
