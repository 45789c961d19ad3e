import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runTarget } from './runner';

const selfTest = (name: string) => path.join(__dirname, 'self-test', `${name}.ts`);

describe('coverage-guided fuzz runner', () => {
  let crashDir: string;
  beforeAll(() => {
    crashDir = mkdtempSync(path.join(tmpdir(), 'nereid-fuzz-test-'));
  });
  afterAll(() => rmSync(crashDir, { recursive: true, force: true }));

  it('reaches a bug behind six nested checks that random inputs would need ~262,144 tries for', async () => {
    const report = await runTarget('magic', selfTest('magic'), { seconds: 50, maxCases: 60000, seed: 1, crashDir, stopOnFinding: true });
    expect(report.findings).toHaveLength(1);
    const [finding] = report.findings;
    expect(finding.kind).toBe('exception');
    expect(finding.message).toBe('TypeError: planted bug reached');
    expect([...finding.input.subarray(0, 6)].map((b) => b & 7)).toEqual([5, 1, 7, 2, 6, 3]);
    // Saved with its error and base64, and found well before blind guessing would have.
    expect(Buffer.from(readFileSync(finding.file))).toEqual(Buffer.from(finding.input));
    expect(readFileSync(finding.file.replace(/\.bin$/, '.txt'), 'utf8')).toContain(Buffer.from(finding.input).toString('base64'));
    expect(report.cases).toBeLessThan(60000);
    expect(report.blocksReached).toBeGreaterThanOrEqual(7);
  }, 60000);

  it('stops an input that hangs, saves it, and goes on in a fresh worker', async () => {
    const report = await runTarget('hang', selfTest('hang'), { seconds: 4, timeoutMs: 500, seed: 2, crashDir });
    expect(report.findings.map((f) => f.kind)).toEqual(['hang']);
    expect(report.findings[0].input.length).toBeGreaterThan(8);
    expect(existsSync(report.findings[0].file)).toBe(true);
    expect(report.restarts).toBeGreaterThanOrEqual(1);
  }, 30000);

  it('reports an input that exhausts the worker heap as a memory finding', async () => {
    const report = await runTarget('memory', selfTest('memory'), { seconds: 8, memoryMb: 64, seed: 3, crashDir, stopOnFinding: true });
    expect(report.findings.map((f) => f.kind)).toContain('memory');
    const memory = report.findings.find((f) => f.kind === 'memory')!;
    expect(memory.input[0]).toBeGreaterThan(250);
  }, 30000);
});
