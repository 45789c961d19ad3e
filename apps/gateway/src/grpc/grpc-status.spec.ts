import { status } from '@grpc/grpc-js';
import { InferenceError, type ErrorCode } from '@nereid/protocol';
import { grpcStatusOf, toServiceError } from './grpc-status';

describe('grpcStatusOf', () => {
  const table: [ErrorCode, status][] = [
    ['INVALID_ARG', status.INVALID_ARGUMENT],
    ['NOT_FOUND', status.NOT_FOUND],
    ['UNAVAILABLE', status.UNAVAILABLE],
    ['INTERNAL', status.INTERNAL],
    ['UNSUPPORTED', status.UNIMPLEMENTED],
    ['ALREADY_EXISTS', status.ALREADY_EXISTS],
    ['CANCELLED', status.CANCELLED],
    ['DEADLINE_EXCEEDED', status.DEADLINE_EXCEEDED],
    ['UNKNOWN', status.UNKNOWN],
  ];
  it.each(table)('%s → %s', (code, expected) => {
    expect(grpcStatusOf(code)).toBe(expected);
  });
});

describe('toServiceError', () => {
  it('keeps the message of an InferenceError', () => {
    const e = toServiceError(InferenceError.notFound("Request for unknown model: 'm' version 3 is not found"));
    expect(e.code).toBe(status.NOT_FOUND);
    expect(e.details).toBe("Request for unknown model: 'm' version 3 is not found");
  });
  it('turns any other error into INTERNAL', () => {
    expect(toServiceError(new Error('boom'))).toMatchObject({ code: status.INTERNAL, details: 'boom' });
    expect(toServiceError('x')).toMatchObject({ code: status.INTERNAL, details: 'x' });
  });
});
