/**
 * The one error type and the table of request errors' words, taken from protocol's modules directly
 * rather than through `@nereid/protocol`: protocol's index imports tensor types, and going through
 * it would make an import cycle (madge counts type-only imports). errors.ts, echo.ts and
 * request-errors.ts import nothing outside themselves, so this stays acyclic.
 */
export { InferenceError } from '../../protocol/src/errors';
export { CoreRequestErrors, GrpcRequestErrors, HttpRequestErrors } from '../../protocol/src/request-errors';
