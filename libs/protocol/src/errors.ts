import { capMessage } from './echo';

/** Triton's transport-neutral error codes. */
export type ErrorCode =
  | 'INVALID_ARG'
  | 'NOT_FOUND'
  | 'UNAVAILABLE'
  | 'INTERNAL'
  | 'UNSUPPORTED'
  | 'ALREADY_EXISTS'
  | 'CANCELLED'
  | 'DEADLINE_EXCEEDED'
  | 'UNKNOWN';

/**
 * The one error type of Nereid: a code and a message a person can act on. The message is capped
 * here (`capMessage`), so no error, whatever client text it repeats, can outgrow what HTTP and gRPC
 * answers carry.
 */
export class InferenceError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(capMessage(message));
    this.name = 'InferenceError';
  }

  static invalidArg(message: string): InferenceError {
    return new InferenceError('INVALID_ARG', message);
  }
  static notFound(message: string): InferenceError {
    return new InferenceError('NOT_FOUND', message);
  }
  static unavailable(message: string): InferenceError {
    return new InferenceError('UNAVAILABLE', message);
  }
  static internal(message: string): InferenceError {
    return new InferenceError('INTERNAL', message);
  }
  static unsupported(message: string): InferenceError {
    return new InferenceError('UNSUPPORTED', message);
  }
}

/** Any thrown value → InferenceError (unknown errors become INTERNAL with their message). */
export function toInferenceError(e: unknown): InferenceError {
  if (e instanceof InferenceError) return e;
  if (e instanceof Error) return new InferenceError('INTERNAL', e.message);
  return new InferenceError('INTERNAL', String(e));
}

/** HTTP status for each code (Triton's table). The switch is exhaustive: a new code fails to compile. */
export function httpStatusOf(code: ErrorCode): number {
  switch (code) {
    case 'INTERNAL':
      return 500;
    case 'NOT_FOUND':
      return 404;
    case 'UNAVAILABLE':
      return 503;
    case 'UNSUPPORTED':
      return 501;
    case 'INVALID_ARG':
    case 'ALREADY_EXISTS':
    case 'CANCELLED':
    case 'DEADLINE_EXCEEDED':
    case 'UNKNOWN':
      return 400;
    default: {
      const never: never = code;
      return never;
    }
  }
}
