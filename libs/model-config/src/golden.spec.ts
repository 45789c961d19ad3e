/**
 * Golden cases under libs/model-config/test-data/<case>/: `config.pbtxt` plus `expected.json` (the parsed
 * object) or `expected_error` (the exact parse error), and optionally `expected_validation` (`OK` or the
 * exact message of normalize → validate). In expected.json, NaN/±Infinity floats are written as the strings
 * "NaN"/"Infinity"/"-Infinity". Set UPDATE_GOLDEN=1 to (re)write expected.json/expected_error, then review.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { InferenceError } from '@nereid/protocol';
import { modelConfigFromJson, modelConfigToJson } from './json';
import { normalizeModelConfig } from './normalize';
import { parseModelConfig, printModelConfig } from './pbtxt';
import { allMessages, getMessage, MODEL_CONFIG_MESSAGE, type MessageDescriptor } from './schema';
import type { ModelConfig } from './types';
import { validateModelConfig } from './validate';
import { isPlainObject } from './values';

const ROOT = path.join(__dirname, '..', 'test-data');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const cases = fs
  .readdirSync(ROOT)
  .filter((d) => fs.statSync(path.join(ROOT, d)).isDirectory())
  .sort();

const NORMALIZE = {
  defaultCpuInstanceCount: (b: string): number => (b === 'onnxruntime' || b === 'tensorflow' ? 2 : 1),
  gpuCount: 0,
};
const VALIDATE = { knownBackends: ['onnxruntime', 'python'], gpuCount: 0 };

/** NaN and ±Infinity as strings so that parsed objects compare with JSON files. */
function jsonSafe(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)),
  ) as unknown;
}

function readOptional(dir: string, name: string): string | undefined {
  const file = path.join(ROOT, dir, name);
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
}

function parseError(text: string, file: string): InferenceError | undefined {
  try {
    parseModelConfig(text, file);
    return undefined;
  } catch (e) {
    if (e instanceof InferenceError) return e;
    throw e;
  }
}

function collectFields(desc: MessageDescriptor, value: unknown, seen: Set<string>): void {
  if (!isPlainObject(value)) return;
  for (const field of desc.fields) {
    const v = value[field.name];
    if (v === undefined) continue;
    seen.add(`${desc.fullName}.${field.name}`);
    if (field.kind !== 'message') continue;
    const sub = getMessage(field.ref as string);
    const items = field.label === 'map' ? Object.values(v as object) : field.label === 'repeated' ? (v as unknown[]) : [v];
    for (const item of items) collectFields(sub, item, seen);
  }
}

const covered = new Set<string>();

describe.each(cases)('golden %s', (name) => {
  const file = `${name}/config.pbtxt`;
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const expectedError = readOptional(name, 'expected_error');
  const expectedValidation = readOptional(name, 'expected_validation');

  if (expectedError !== undefined || (UPDATE && parseError(text, file))) {
    it('fails to parse with the expected INVALID_ARG text', () => {
      const err = parseError(text, file);
      if (UPDATE && err) fs.writeFileSync(path.join(ROOT, name, 'expected_error'), err.message);
      expect(err?.code).toBe('INVALID_ARG');
      expect(err?.message).toBe(UPDATE ? err?.message : expectedError);
    });
    return;
  }

  const parsed = parseModelConfig(text, file);
  collectFields(getMessage(MODEL_CONFIG_MESSAGE), parsed, covered);

  it('parses to expected.json', () => {
    const expectedPath = path.join(ROOT, name, 'expected.json');
    if (UPDATE) fs.writeFileSync(expectedPath, JSON.stringify(jsonSafe(parsed), null, 2) + '\n');
    expect(jsonSafe(parsed)).toEqual(JSON.parse(fs.readFileSync(expectedPath, 'utf8')));
  });

  it('prints canonical pbtxt that re-parses to an identical object', () => {
    const printed = printModelConfig(parsed);
    expect(jsonSafe(parseModelConfig(printed, 'printed.pbtxt'))).toEqual(jsonSafe(parsed));
    expect(printModelConfig(parseModelConfig(printed, 'printed.pbtxt'))).toBe(printed);
  });

  it('round-trips through the JSON form', () => {
    const json = JSON.parse(JSON.stringify(modelConfigToJson(parsed))) as unknown;
    expect(modelConfigToJson(modelConfigFromJson(json))).toEqual(json);
    expect(jsonSafe(modelConfigToJson(modelConfigFromJson(JSON.stringify(jsonSafe(parsed)))))).toEqual(json);
  });

  if (expectedValidation !== undefined) {
    it(`validation: ${expectedValidation}`, () => {
      const run = (): void => validateModelConfig(normalizeModelConfig(parsed as ModelConfig, NORMALIZE), VALIDATE);
      if (expectedValidation === 'OK') {
        expect(run).not.toThrow();
      } else {
        expect(run).toThrow(new InferenceError('INVALID_ARG', expectedValidation));
        try {
          run();
        } catch (e) {
          expect((e as InferenceError).code).toBe('INVALID_ARG');
        }
      }
    });
  }
});

describe('golden coverage', () => {
  it('uses every field of every message of model_config.proto at least once', () => {
    const all = allMessages().flatMap((m) => m.fields.map((f) => `${m.fullName}.${f.name}`));
    expect(all.filter((f) => !covered.has(f))).toEqual([]);
  });

  it('has at least 15 broken configs and a validation case per rule', () => {
    expect(cases.filter((c) => c.startsWith('broken_')).length).toBeGreaterThanOrEqual(15);
    expect(cases.filter((c) => c.startsWith('invalid_')).length).toBeGreaterThanOrEqual(30);
  });
});
