/**
 * The configuration behind `ModelGateway.layerCatalogue`: one target per catalogue id and one free-
 * text workflow routing over them in the order given, with defaults that never widen policy.
 *
 * - Where data may go is never guessed: unless `regions` is given, every target and the workflow
 *   say `"unspecified"`, so a command that asks for a region (`regions: ["eu"]`) is refused rather
 *   than sent to a provider nobody placed there.
 * - Data class `"public"` unless `dataClass` is given: a command that says its input is anything
 *   else (`"internal"`, `"confidential"`) is refused (`DATA_CLASS_NOT_ALLOWED`).
 * - A 30 s deadline and a 1 024-token output cap per call (so a budget reserves 1 024 output
 *   tokens, not the model's maximum); a command may only lower them.
 * - Fallback only along the ids given, each under the same constraints (as every workflow).
 *
 * @internal
 */
import { Array as Arr } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Catalogue from "../Catalogue.js"
import type * as GatewayConfig from "../GatewayConfig.js"

/**
 * Options of `ModelGateway.layerCatalogue`; every one narrows or names, none widens.
 *
 * @since 0.2.0
 * @category Models
 */
export interface CatalogueOptions {
  /** The workflow's name, the one commands give. Default `"chat"`. */
  readonly workflow?: string | undefined
  /**
   * Regions the providers run in and the data may go to (every target and the workflow). Default
   * `["unspecified"]`: commands that ask for a region are refused.
   */
  readonly regions?: NonEmptyReadonlyArray<string> | undefined
  /** The data class of the inputs, the only one the targets receive. Default `"public"`. */
  readonly dataClass?: string | undefined
  /** End-to-end deadline of a call, in milliseconds. Default 30 000. */
  readonly timeout?: number | undefined
  /** Output-token cap of a call (what budgets reserve for). Default 1 024. */
  readonly maxOutputTokens?: number | undefined
}

/**
 * Catalogue ids, at least one, primary first (`Catalogue.ids` lists them).
 *
 * @since 0.2.0
 * @category Models
 */
export type CatalogueIds = NonEmptyReadonlyArray<Catalogue.Id>

/**
 * The workflow name `layerCatalogue` gives its workflow by default.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultWorkflow = "chat"

/**
 * The configuration `layerCatalogue` decodes, in encoded (JSON) form: target `model://<id>` per
 * catalogue id, and the workflow routing over them in order.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const catalogueConfig = (ids: CatalogueIds, options: CatalogueOptions = {}): GatewayConfig.Encoded => {
  const regions = options.regions ?? ["unspecified"]
  const dataClass = options.dataClass ?? "public"
  const name = options.workflow ?? defaultWorkflow
  const ref = (id: Catalogue.Id) => `model://${id}`
  return {
    targets: ids.map((id) => ({ ref: ref(id), catalogue: id, regions, dataClasses: [dataClass] })),
    workflows: [
      {
        name,
        policyVersion: `catalogue-defaults-${Catalogue.version}`,
        prompt: { id: name, version: "inline" },
        route: Arr.map(ids, ref),
        timeout: options.timeout ?? 30_000,
        maxOutputTokens: options.maxOutputTokens ?? 1024,
        regions,
        dataClass
      }
    ]
  }
}
