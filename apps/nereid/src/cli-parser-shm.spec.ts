import { parseServeArgs, UsageError } from './cli-parser';

const REPO = '--model-repository=/models';

describe('--allow-client-shm', () => {
  it('is off by default (Triton 26.05) and turned on as Triton spells it', () => {
    expect(parseServeArgs([REPO]).allowClientShm).toBe(false);
    expect(parseServeArgs([REPO, '--allow-client-shm=true']).allowClientShm).toBe(true);
    expect(parseServeArgs([REPO, '--allow-client-shm', 'false']).allowClientShm).toBe(false);
  });

  it('refuses a value that is not a boolean', () => {
    expect(() => parseServeArgs([REPO, '--allow-client-shm=maybe'])).toThrow(UsageError);
  });
});
