/**
 * The one error type, taken from protocol's errors module directly rather than through
 * `@nereid/protocol`: protocol's index imports tensor types, and going through it would make an
 * import cycle (madge counts type-only imports). errors.ts imports nothing, so this stays acyclic.
 */
export { InferenceError } from '../../protocol/src/errors';
export { HttpRequestErrors } from '../../protocol/src/request-errors';
