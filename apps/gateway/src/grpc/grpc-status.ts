import { status as GrpcStatus, type ServiceError, Metadata } from '@grpc/grpc-js';
import { type ErrorCode, toInferenceError } from '@nereid/protocol';

/**
 * gRPC status code for each Triton error code (spec grpc-protocol.md §2). The switch is exhaustive:
 * a new `ErrorCode` fails to compile until it is mapped here.
 */
export function grpcStatusOf(code: ErrorCode): GrpcStatus {
  switch (code) {
    case 'INVALID_ARG':
      return GrpcStatus.INVALID_ARGUMENT;
    case 'NOT_FOUND':
      return GrpcStatus.NOT_FOUND;
    case 'UNAVAILABLE':
      return GrpcStatus.UNAVAILABLE;
    case 'INTERNAL':
      return GrpcStatus.INTERNAL;
    case 'UNSUPPORTED':
      return GrpcStatus.UNIMPLEMENTED;
    case 'ALREADY_EXISTS':
      return GrpcStatus.ALREADY_EXISTS;
    case 'CANCELLED':
      return GrpcStatus.CANCELLED;
    case 'DEADLINE_EXCEEDED':
      return GrpcStatus.DEADLINE_EXCEEDED;
    case 'UNKNOWN':
      return GrpcStatus.UNKNOWN;
    default: {
      const never: never = code;
      return never;
    }
  }
}

/** Any thrown value → the status grpc-js sends (code + message, as Triton returns errors). */
export function toServiceError(e: unknown): Partial<ServiceError> & { code: GrpcStatus; details: string } {
  const err = toInferenceError(e);
  return { code: grpcStatusOf(err.code), details: err.message, metadata: new Metadata() };
}
