import fc from 'fast-check';
import { InferenceError } from '@nereid/protocol';
import { fuzz, fuzzParams, onlyThrows } from '../../../../test/helpers/fuzz';
import { parseModelConfig } from './parser';
import { printModelConfig } from './printer';

const parse = (text: string) => parseModelConfig(text, 'config.pbtxt');

/** Pieces of config.pbtxt text: field names of several nesting levels, values, separators and junk. */
const tokenArb = fc.oneof(
  fc.constantFrom(
    'name', 'platform', 'backend', 'max_batch_size', 'input', 'output', 'dims', 'data_type', 'TYPE_FP32', 'TYPE_STRING',
    'instance_group', 'kind', 'KIND_CPU', 'count', 'dynamic_batching', 'preferred_batch_size', 'parameters', 'key',
    'value', 'string_value', 'sequence_batching', 'control_input', 'control', 'ensemble_scheduling', 'step',
    'input_map', 'response_cache', 'enable', 'optimization', 'reshape', 'shape', 'version_policy', 'latest',
    'num_versions', 'label_filename', 'true', 'false', 'inf', 'nan', '-inf',
    ':', '{', '}', '[', ']', '<', '>', ',', ';', '#', '\n', ' ', '"', "'", '\\', '-', '.', '0x', 'e',
  ),
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.double().map(String),
  fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
  fc.string({ maxLength: 4, unit: 'binary' }),
);
const soupArb = fc.array(tokenArb, { maxLength: 40 }).map((tokens) => tokens.join(' '));

/** Valid configs: singular fields at most once, repeated ones any number of times. */
const validArb = fc
  .record(
    {
      name: fc.string({ maxLength: 10, unit: 'binary' }).map((s) => `name: ${JSON.stringify(s)}`),
      batch: fc.integer({ min: -2147483648, max: 2147483647 }).map((n) => `max_batch_size: ${n}`),
      batching: fc
        .array(fc.integer({ min: 1, max: 64 }), { maxLength: 3 })
        .map((p) => `dynamic_batching { ${p.map((x) => `preferred_batch_size: ${x}`).join(' ')} }`),
      cache: fc.boolean().map((b) => `response_cache { enable: ${b} }`),
      inputs: fc.array(
        fc
          .tuple(
            fc.string({ maxLength: 6 }),
            fc.constantFrom('TYPE_FP32', 'TYPE_INT64', 'TYPE_STRING', 'TYPE_BOOL'),
            fc.array(fc.integer({ min: -1, max: 1 << 20 }), { maxLength: 4 }),
          )
          .map(([n, t, d]) => `input { name: ${JSON.stringify(n)} data_type: ${t} dims: [ ${d.join(', ')} ] }`),
        { maxLength: 3 },
      ),
      groups: fc.array(fc.integer({ min: 0, max: 100 }).map((c) => `instance_group [ { kind: KIND_CPU count: ${c} } ]`), { maxLength: 2 }),
      parameters: fc.array(
        fc
          .tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6, unit: 'binary' }))
          .map(([k, v]) => `parameters { key: ${JSON.stringify(k)} value: { string_value: ${JSON.stringify(v)} } }`),
        { maxLength: 3 },
      ),
    },
    { requiredKeys: [] },
  )
  .map((r) => Object.values(r).flat().join('\n'));

describe('pbtxt parser (fuzz)', () => {
  it('refuses arbitrary text only with InferenceError', () => {
    fuzz(
      fc.property(fc.string({ maxLength: 200, unit: 'binary' }), (text) => {
        onlyThrows(InferenceError, () => parse(text));
      }),
      fuzzParams(),
    );
  });

  it('refuses token soup (field names, values, brackets, junk) only with InferenceError', () => {
    fuzz(
      fc.property(soupArb, (text) => {
        onlyThrows(InferenceError, () => parse(text));
      }),
      fuzzParams(),
    );
  });

  it('refuses deep nesting only with InferenceError', () => {
    fuzz(
      fc.property(fc.constantFrom('input {', 'parameters { value {', '[', 'instance_group ['), fc.integer({ min: 1, max: 20000 }), (open, depth) => {
        onlyThrows(InferenceError, () => parse(`${open} `.repeat(depth)));
      }),
      fuzzParams(50),
    );
  });

  it('round-trips valid configs: parse, print and parse again give the same config', () => {
    fuzz(
      fc.property(validArb, (text) => {
        const config = parse(text);
        expect(parse(printModelConfig(config))).toEqual(config);
      }),
      fuzzParams(),
    );
  });
});
