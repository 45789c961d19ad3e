import { InferenceError, httpStatusOf, toInferenceError } from './errors';

describe('error codes', () => {
  it('maps codes to Triton HTTP statuses', () => {
    expect(httpStatusOf('INTERNAL')).toBe(500);
    expect(httpStatusOf('NOT_FOUND')).toBe(404);
    expect(httpStatusOf('UNAVAILABLE')).toBe(503);
    expect(httpStatusOf('UNSUPPORTED')).toBe(501);
    expect(httpStatusOf('INVALID_ARG')).toBe(400);
    expect(httpStatusOf('ALREADY_EXISTS')).toBe(400);
    expect(httpStatusOf('CANCELLED')).toBe(400);
  });

  it('wraps foreign errors as INTERNAL and keeps InferenceErrors', () => {
    const e = InferenceError.notFound('x');
    expect(toInferenceError(e)).toBe(e);
    expect(toInferenceError(new Error('boom'))).toMatchObject({ code: 'INTERNAL', message: 'boom' });
    expect(toInferenceError('str')).toMatchObject({ code: 'INTERNAL', message: 'str' });
  });
});
