/** What a call that must fail with an InferenceError threw; the test fails if it returns or throws anything else. */
import { InferenceError } from '@nereid/protocol';

export function errorOf(fn: () => unknown): InferenceError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InferenceError);
    return e as InferenceError;
  }
  throw new Error('expected an error');
}
