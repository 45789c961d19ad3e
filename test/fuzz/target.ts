/**
 * What a coverage-guided fuzz target is: the code it drives, its oracle, its seeds and dictionary.
 * A target module (test/fuzz/targets/*.ts) exports `target: FuzzTarget`; the worker loads it
 * after coverage has started, so that only the target's own files need to be compiled with block counters.
 */
import path from 'node:path';

export interface FuzzTarget {
  /** Absolute path prefixes of the files whose blocks guide the fuzzer (the code under test). */
  coverage: readonly string[];
  /** Longest input generated (bytes). */
  maxLength: number;
  /** Valid inputs to start from (the shapes the tests already build). */
  seeds(): Uint8Array[];
  /** Tokens of the format (keys, keywords, headers) that mutations insert. */
  dictionary: readonly (string | Uint8Array)[];
  /**
   * Runs one input through the code under test and checks the oracle: returns when the code
   * accepted the input or refused it with its own typed error; throws (anything) on a finding.
   */
  run(input: Buffer): void;
}

/** The repository root. */
export const ROOT = path.resolve(__dirname, '../..');

/** Absolute path of a file or folder of the repository. */
export function fromRoot(...parts: string[]): string {
  return path.join(ROOT, ...parts);
}

/** A finding of a target's oracle other than an unexpected exception: a broken invariant. */
export class OracleViolation extends Error {
  override readonly name = 'OracleViolation';
}

/** Throws an OracleViolation when `ok` is false. */
export function check(ok: boolean, what: string): void {
  if (!ok) throw new OracleViolation(what);
}

type ErrorClass = abstract new (...args: never[]) => Error;

/** Runs `fn`; its own typed error is an answer, anything else thrown is rethrown as a finding. */
export function refusesOnlyWith<T>(errorType: ErrorClass, fn: () => T): T | undefined {
  try {
    return fn();
  } catch (e) {
    if (e instanceof errorType) return undefined;
    throw e;
  }
}
