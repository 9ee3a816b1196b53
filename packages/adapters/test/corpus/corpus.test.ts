/**
 * The conformance corpus replayed: every recording through its adapter whole and cut at awkward
 * byte boundaries (inside event separators, after `data`, inside multi-byte characters), and once
 * through the gateway. One-byte writes are in `corpus.slow.test.ts`.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { expectOutcome, expectThroughGateway, loadCorpus, replay, ReplayServer, throughGateway } from "./replay.js"

const corpus = loadCorpus()

describe("conformance corpus", () => {
  layer(Layer.merge(ReplayServer.layer(corpus), NodeHttpClient.layerUndici), { excludeTestServices: true })((it) => {
    it("holds at least 120 recordings, each with an expectation of one kind", () => {
      assert.isAtLeast(corpus.length, 120)
      for (const recording of corpus) {
        assert.isTrue(
          (recording.expect.ok === undefined) !== (recording.expect.error === undefined),
          `${recording.family}/${recording.name}`
        )
      }
    })

    for (const recording of corpus) {
      it.effect(`${recording.family}/${recording.name}`, () =>
        Effect.gen(function* () {
          for (const split of ["whole", "frames", "utf8"] as const) {
            expectOutcome(recording, yield* replay(recording, split))
          }
          expectThroughGateway(recording, yield* throughGateway(recording))
        })
      )
    }
  })
})
