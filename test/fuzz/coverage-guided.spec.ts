/**
 * The coverage-guided fuzzer inside `npm test`: each target of the list for a few seconds
 * (FUZZ_SECONDS_EACH, default 3; `npm run fuzz` runs them for minutes). A finding fails the test with
 * its input saved under .tmp/fuzz/crashes/<target>/ and printed in base64.
 */
import { formatFinding, formatReport, runTarget } from './runner';
import { TARGETS } from './targets';

const seconds = Number(process.env.FUZZ_SECONDS_EACH) > 0 ? Number(process.env.FUZZ_SECONDS_EACH) : 3;

describe('coverage-guided fuzzing (short run)', () => {
  it.each(Object.keys(TARGETS))(
    '%s: no crash, hang or memory finding',
    async (name) => {
      const report = await runTarget(name, TARGETS[name], { seconds });
      console.log(formatReport(report));
      if (report.findings.length > 0) throw new Error(`${formatReport(report)}\n${report.findings.map(formatFinding).join('\n')}`);
      // It ran: the seeds and mutations reached the code under test.
      expect(report.cases).toBeGreaterThan(0);
      expect(report.blocksReached).toBeGreaterThan(0);
      expect(report.corpus).toBeGreaterThan(0);
    },
    (seconds + 30) * 1000,
  );
});
