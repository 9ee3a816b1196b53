/**
 * The media type of each audio format of a message's `audio` part.
 *
 * @internal
 */
import type { ContentPart } from "@modelgate/core/ModelCommand"

/** An `audio` part's format. */
export type AudioFormat = Extract<ContentPart, { readonly _tag: "audio" }>["format"]

/** The registered (IANA) media type of each audio format. */
export const audioMediaTypes: Readonly<Record<AudioFormat, string>> = {
  wav: "audio/wav",
  mp3: "audio/mpeg",
  flac: "audio/flac",
  aac: "audio/aac",
  ogg: "audio/ogg",
  webm: "audio/webm",
  m4a: "audio/mp4",
  aiff: "audio/aiff"
}
