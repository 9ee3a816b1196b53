/**
 * Which calls a workflow's shadow samples: the canary's hash of the call id, so the same id always
 * gets the same answer.
 */
import { canarySide } from "./router/engine.js"

/** Whether the call `callId` is in the sampled `share` (a hash of the id: the same id, the same answer). */
export const sampled = (callId: string, share: number): boolean =>
  canarySide({ id: "shadow", share }, callId) === "candidate"
