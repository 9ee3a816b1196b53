/**
 * The services a gateway layer builds for itself when its context has none (`ModelGateway.layer`,
 * `ModelGateway.withDefaults`).
 */
import { type Context, Effect, Layer, Option } from "effect"
import * as CanaryController from "../CanaryController.js"
import * as QualitySignals from "../QualitySignals.js"
import * as RateLimitStore from "../RateLimitStore.js"
import * as ResponseCache from "../ResponseCache.js"
import * as ResponseCacheStore from "../ResponseCacheStore.js"
import * as Shadow from "../Shadow.js"

/** A service from the context the layer is built in, or `fallback` when there is none. */
export const fromContextOr = <I, S>(tag: Context.Tag<I, S>, fallback: Layer.Layer<I>): Layer.Layer<I> =>
  Layer.unwrapEffect(
    Effect.map(Effect.serviceOption(tag), (found) =>
      found._tag === "Some" ? Layer.succeed(tag, found.value) : fallback
    )
  )

/** `ModelGateway.OptionalServices`: the context's, else the gateway's own. */
export const optionalServices: Layer.Layer<
  | RateLimitStore.RateLimitStore
  | CanaryController.CanaryController
  | QualitySignals.QualitySignals
  | Shadow.ShadowRecorder
> = Layer.mergeAll(
  fromContextOr(RateLimitStore.RateLimitStore, RateLimitStore.layerMemory),
  fromContextOr(
    CanaryController.CanaryController,
    Layer.effect(CanaryController.CanaryController, CanaryController.make)
  ),
  fromContextOr(QualitySignals.QualitySignals, QualitySignals.layer),
  fromContextOr(Shadow.ShadowRecorder, Shadow.layerLog)
)

/**
 * The response cache of the context (e.g. over a Redis store, `ResponseCache.layer`), else one in
 * this gateway's memory (`ResponseCacheStore.makeMemory`). Read without requiring it.
 */
export const responseCacheOrMemory: Effect.Effect<ResponseCache.Service> = Effect.map(
  Effect.serviceOption(ResponseCache.ResponseCache),
  Option.getOrElse(() => ResponseCache.make(ResponseCacheStore.makeMemory()))
)
