/**
 * Shared pieces of the property-based fuzz tests (*.fuzz.spec.ts): the run count (a few hundred
 * runs inside `npm test`, FUZZ_RUNS for `npm run fuzz`), the check that a decoder fails only with
 * its documented error type, and arbitraries for valid tensors of every datatype.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { DATATYPES, ELEMENT_SIZE, type DataType } from '@nereid/tensor';

/** Runs per property: FUZZ_RUNS when set (npm run fuzz), else `short`. */
export function fuzzRuns(short = 300): number {
  const env = Number(process.env.FUZZ_RUNS);
  return Number.isSafeInteger(env) && env > 0 ? env : short;
}

/** fc.assert parameters: the run count (a hang in a decoder shows as the test's jest timeout). */
export function fuzzParams(short?: number): { numRuns: number } {
  return { numRuns: fuzzRuns(short) };
}

/**
 * Checks a property like fc.assert; under `npm run fuzz` (FUZZ_REPORT_DIR set) also records the
 * cases run and whether a counterexample was found, for the run's summary.
 */
export function fuzz<Ts extends [unknown, ...unknown[]]>(property: fc.IProperty<Ts>, params = fuzzParams()): void {
  const details = fc.check(property, params);
  const dir = process.env.FUZZ_REPORT_DIR;
  if (dir) appendFileSync(path.join(dir, 'cases.txt'), `${details.numRuns} ${details.failed ? 1 : 0}\n`);
  if (details.failed) throw new Error(fc.defaultReportMessage(details), { cause: details.errorInstance });
}

type ErrorClass = abstract new (...args: never[]) => Error;

/** Runs `fn`; a throw of anything but `errorType` fails the property (the error is rethrown). */
export function onlyThrows<T>(errorType: ErrorClass, fn: () => T): T | undefined {
  try {
    return fn();
  } catch (e) {
    if (e instanceof errorType) return undefined;
    throw e;
  }
}

/** A valid tensor in wire form: datatype, shape and its raw little-endian bytes (BYTES length-prefixed). */
export interface RawTensor {
  datatype: DataType;
  shape: number[];
  raw: Uint8Array;
  /** BYTES only: the elements. */
  elements?: Uint8Array[];
}

const shapeArb = fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 0, maxLength: 3 });

function countOf(shape: readonly number[]): number {
  return shape.reduce((a, d) => a * d, 1);
}

function prefixed(elements: readonly Uint8Array[]): Uint8Array {
  const out = Buffer.alloc(elements.reduce((n, e) => n + 4 + e.byteLength, 0));
  let offset = 0;
  for (const e of elements) {
    out.writeUInt32LE(e.byteLength, offset);
    out.set(e, offset + 4);
    offset += 4 + e.byteLength;
  }
  return out;
}

/** A valid tensor of `datatype` (any datatype when omitted; BOOL bytes are 0 or 1; BYTES elements `bytesElement`). */
export function rawTensorArb(
  datatypes: readonly DataType[] = DATATYPES,
  bytesElement: fc.Arbitrary<Uint8Array> = fc.uint8Array({ maxLength: 12 }),
): fc.Arbitrary<RawTensor> {
  return fc.tuple(fc.constantFrom(...datatypes), shapeArb).chain(([datatype, shape]): fc.Arbitrary<RawTensor> => {
    const count = countOf(shape);
    if (datatype === 'BYTES') {
      return fc
        .array(bytesElement, { minLength: count, maxLength: count })
        .map((elements) => ({ datatype, shape, raw: prefixed(elements), elements }));
    }
    const size = count * ELEMENT_SIZE[datatype];
    const bytes =
      datatype === 'BOOL'
        ? fc.array(fc.boolean(), { minLength: size, maxLength: size }).map((b) => Uint8Array.from(b, Number))
        : fc.uint8Array({ minLength: size, maxLength: size });
    return bytes.map((raw) => ({ datatype, shape, raw }));
  });
}

/** Shapes a hostile client might send: empty, zero, huge and overflowing dimensions. */
export const hostileShapeArb = fc.array(
  fc.oneof(
    fc.integer({ min: 0, max: 8 }),
    fc.constantFrom(2 ** 31 - 1, 2 ** 32, 2 ** 53 - 1, 2 ** 62),
    fc.nat(),
  ),
  { maxLength: 5 },
);
