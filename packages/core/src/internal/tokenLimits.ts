/**
 * The tuning constants of `TokenEstimator`: piece and slice lengths, the image estimate, the turn
 * length of the yielding estimators.
 */

/**
 * Longest run (of non-whitespace, or of whitespace) counted in one piece; longer runs are sliced.
 */
export const maxPieceLength = 256

/**
 * Flat estimate for one image part (providers bill images by tiles; this is a conservative mid value).
 */
export const imageTokens = 1_000

/**
 * Characters counted in one step by `estimateInputYielding` (and what the router counts at
 * once): a slice of 1 K characters takes well under 1 ms of prose and a few ms of base64 (its
 * worst case here: ~3 ms idle, ~15 ms with the machine's two cores shared by many processes).
 * The slices are the same whatever the timing, so a count does not depend on when it yields.
 */
export const sliceCharacters = 1_024

/**
 * Milliseconds of counting after which `estimateInputYielding` gives the event loop a turn:
 * a turn holds the loop for this long plus one slice at most. Inputs counted within it never
 * yield (a typical prompt), so most counts cost one synchronous pass.
 */
export const turnMilliseconds = 8
