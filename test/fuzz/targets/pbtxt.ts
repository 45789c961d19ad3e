/**
 * The config.pbtxt parser (libs/model-config/src/pbtxt), fed text as the repository reads a file
 * (UTF-8). Seeds: every config.pbtxt of the repository's models and test fixtures; dictionary: the
 * field names and enum values of proto/model_config.proto and the text format's punctuation.
 * Oracle: parsed, or refused with an InferenceError (INVALID_ARG `failed to read text proto ...`);
 * a parsed config prints (printer.ts) to text that parses back to the same config.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseModelConfig } from '../../../libs/model-config/src/pbtxt/parser';
import { printModelConfig } from '../../../libs/model-config/src/pbtxt/printer';
import { InferenceError } from '@nereid/protocol';
import { check, fromRoot, refusesOnlyWith, type FuzzTarget } from '../target';

function configFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) configFiles(file, out);
    else if (name === 'config.pbtxt') out.push(file);
  }
  return out;
}

function protoWords(): string[] {
  const proto = readFileSync(fromRoot('proto/model_config.proto'), 'utf8').replace(/\/\/.*$/gm, '');
  const words = new Set<string>();
  for (const m of proto.matchAll(/^\s*(?:repeated\s+|optional\s+)?(?:map<[^>]+>|[\w.]+)\s+(\w+)\s*=\s*\d+/gm)) words.add(m[1]);
  return [...words];
}

export const target: FuzzTarget = {
  coverage: [fromRoot('libs/model-config/src/pbtxt/')],
  maxLength: 8192,
  dictionary: [
    ...protoWords(),
    ':', '{', '}', '[', ']', '<', '>', ',', ';', '#', '\n', '"', "'", '\\', '\\x', '\\u', '\\377', '-', '.', '0x', '0X', 'e', 'E',
    'inf', '-inf', 'nan', 'true', 'false', 'True', 'f', 't', '1e39', '0xffffffffffffffff', '-9223372036854775809',
  ],
  seeds() {
    const files = [...configFiles(fromRoot('models')), ...configFiles(fromRoot('test/fixtures'))];
    const texts = new Set(files.map((f) => readFileSync(f, 'utf8')).filter((t) => t.length <= this.maxLength));
    return [...texts].map((t) => new Uint8Array(Buffer.from(t, 'utf8')));
  },
  run(input) {
    const text = input.toString('utf8');
    const config = refusesOnlyWith(InferenceError, () => parseModelConfig(text, 'config.pbtxt'));
    if (config === undefined) return;
    const printed = printModelConfig(config);
    const again = refusesOnlyWith(InferenceError, () => parseModelConfig(printed, 'config.pbtxt'));
    check(again !== undefined, `the printed config does not parse:\n${printed}`);
    check(isDeepStrictEqual(again, config), `the printed config parses to another config:\n${printed}`);
  },
};
