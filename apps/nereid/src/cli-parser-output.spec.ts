import { DEFAULT_MAX_OUTPUT_SIZE } from '@nereid/gateway';
import { defaultServeOptions } from './cli-options';
import { parseServeArgs, usage } from './cli-parser';

const REPO = '--model-repository=/models';

describe('--max-output-size (Nereid\'s own bound on the output data of a response)', () => {
  it('defaults to the bound the front doors apply, and says so', () => {
    expect(defaultServeOptions().maxOutputSize).toBe(DEFAULT_MAX_OUTPUT_SIZE);
    expect(parseServeArgs([REPO]).maxOutputSize).toBe(DEFAULT_MAX_OUTPUT_SIZE);
    expect(usage()).toContain(`(default ${DEFAULT_MAX_OUTPUT_SIZE})`);
  });

  it('takes a positive byte count', () => {
    expect(parseServeArgs([REPO, '--max-output-size=4096']).maxOutputSize).toBe(4096);
    expect(() => parseServeArgs([REPO, '--max-output-size=0'])).toThrow('Bad option: "--max-output-size".\nvalue 0 is out of range');
    expect(() => parseServeArgs([REPO, '--max-output-size=lots'])).toThrow('invalid value for integer option: lots');
  });
});
