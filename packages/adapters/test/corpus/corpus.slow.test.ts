/**
 * The conformance corpus with one-byte writes: every recording through its adapter, each byte of
 * the body written on its own (many writes per recording: in the slow project).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { expectOutcome, loadCorpus, replay, ReplayServer } from "./replay.js"

const corpus = loadCorpus()

describe("conformance corpus, one byte at a time", () => {
  layer(Layer.merge(ReplayServer.layer(corpus), NodeHttpClient.layerUndici), { excludeTestServices: true })((it) => {
    for (const recording of corpus) {
      it.effect(
        `${recording.family}/${recording.name}`,
        () => Effect.map(replay(recording, "bytes"), (outcome) => expectOutcome(recording, outcome)),
        180_000
      )
    }
  })
})
