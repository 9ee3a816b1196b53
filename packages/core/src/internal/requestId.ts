/**
 * The caller's request id (`ModelCommand.requestId`, `EmbedCommand.requestId`): a correlation
 * token, never content. Bounded (1 to 128 characters) and of a safe charset (letters, digits,
 * `.`, `_`, `:`, `-`: a UUID, a ULID, a W3C trace id, `req_…`), so it can go into logs, spans,
 * records and headers as it is.
 */
import { Schema } from "effect"

/** 1 to 128 characters of `A-Z a-z 0-9 . _ : -`. */
export const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/

/** The schema of a request id (the commands' decoders name its path, never its value). */
export const RequestId = Schema.String.pipe(Schema.pattern(requestIdPattern))
