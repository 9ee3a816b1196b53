/**
 * The integer arithmetic of cost (`Pricing`'s): prices as whole store units (billionths of a
 * currency unit) per million tokens, and the units of a token count rounded up. Shared by
 * `Pricing` and the router's per-workflow price table, so that both compute the same numbers.
 */

/** Store units (billionths of a currency unit) per currency unit. */
export const unitsPerCurrency = 1_000_000_000

/**
 * A price per million tokens as whole store units (billionths) per million tokens: the one
 * conversion from a float price, rounded to the nearest unit (prices are decimals such as 0.075).
 */
export const unitsPerMillion = (pricePerMillion: number): number => Math.round(pricePerMillion * unitsPerCurrency)

/**
 * Store units of `tokens` at `perMillion` units per million tokens, rounded up, in exact integer
 * arithmetic: the price is split into whole units per token and a remainder per million, so no
 * product exceeds 2^53 for any realistic count (no BigInt).
 */
export const unitsOfTokens = (tokens: number, perMillion: number): number => {
  if (tokens <= 0 || perMillion === 0) return 0
  const perToken = wholeUnitsPerToken(perMillion)
  return splitUnitsOfTokens(tokens, perToken, perMillion - perToken * 1_000_000)
}

/** The whole store units per token of a price of `perMillion` units per million tokens. */
export const wholeUnitsPerToken = (perMillion: number): number => Math.floor(perMillion / 1_000_000)

/**
 * {@link unitsOfTokens} of a price split in advance into whole units per token ({@link
 * wholeUnitsPerToken}) and the `rest` per million tokens.
 */
export const splitUnitsOfTokens = (tokens: number, perToken: number, rest: number): number =>
  tokens <= 0 ? 0 : tokens * perToken + Math.ceil((tokens * rest) / 1_000_000)
