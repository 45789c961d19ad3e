/**
 * The long coverage-guided run of `npm run fuzz` (scripts/fuzz.js starts it with register.js):
 *
 *   FUZZ_SECONDS=300 FUZZ_TARGETS=pbtxt,http-json node -r ./test/fuzz/register.js test/fuzz/cli.ts
 *
 * FUZZ_SECONDS: per target (default 60); FUZZ_TARGETS: names (default all); FUZZ_SEED,
 * FUZZ_TIMEOUT_MS (per input, 3000), FUZZ_MEMORY_MB (512), FUZZ_CRASH_DIR (.tmp/fuzz/crashes).
 * Prints per target the cases run, blocks reached and findings; exits 1 when there were findings.
 */
import { formatFinding, formatReport, runTarget, type FuzzReport } from './runner';
import { TARGETS } from './targets';

function numberEnv(name: string): number | undefined {
  const v = Number(process.env[name]);
  return process.env[name] !== undefined && Number.isFinite(v) && v > 0 ? v : undefined;
}

async function main(): Promise<number> {
  const names = process.env.FUZZ_TARGETS ? process.env.FUZZ_TARGETS.split(',').map((s) => s.trim()) : Object.keys(TARGETS);
  const unknown = names.filter((n) => !(n in TARGETS));
  if (unknown.length > 0) {
    console.error(`fuzz: unknown target(s) ${unknown.join(', ')}; targets: ${Object.keys(TARGETS).join(', ')}`);
    return 2;
  }
  const seconds = numberEnv('FUZZ_SECONDS') ?? 60;
  console.log(`fuzz (coverage-guided): ${names.length} targets, ${seconds} s each`);
  const reports: FuzzReport[] = [];
  for (const name of names) {
    const report = await runTarget(name, TARGETS[name], {
      seconds,
      seed: numberEnv('FUZZ_SEED'),
      timeoutMs: numberEnv('FUZZ_TIMEOUT_MS'),
      memoryMb: numberEnv('FUZZ_MEMORY_MB'),
      crashDir: process.env.FUZZ_CRASH_DIR,
    });
    reports.push(report);
    console.log(formatReport(report));
    for (const f of report.findings) console.log(formatFinding(f));
  }
  const cases = reports.reduce((n, r) => n + r.cases, 0);
  const findings = reports.reduce((n, r) => n + r.findings.length, 0);
  console.log(`fuzz (coverage-guided): ${cases} cases over ${reports.length} targets, ${findings} findings`);
  return findings > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
