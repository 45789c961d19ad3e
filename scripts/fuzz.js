#!/usr/bin/env node
/**
 * `npm run fuzz`: the fuzzing of `npm test`, run longer.
 *
 * 1. The property-based fuzz tests (*.fuzz.spec.ts) with many more runs: FUZZ_RUNS per property
 *    (default 20000); prints the cases run and the failures found.
 * 2. The coverage-guided fuzzer (test/fuzz/) on each target for FUZZ_SECONDS (default 60): prints
 *    per target the cases run, blocks reached and crashes found (saved under .tmp/fuzz/crashes).
 *
 * Options: --seconds=N (guided, per target), --targets=a,b (guided), --guided-only,
 * --properties-only; other arguments go to jest (e.g. a path pattern to fuzz one decoder).
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const options = { guided: true, properties: true, env: {} };
const jestArgs = [];
for (const arg of process.argv.slice(2)) {
  const [key, value] = arg.split('=', 2);
  if (key === '--guided-only') options.properties = false;
  else if (key === '--properties-only') options.guided = false;
  else if (key === '--seconds' && value) options.env.FUZZ_SECONDS = value;
  else if (key === '--targets' && value) options.env.FUZZ_TARGETS = value;
  else jestArgs.push(arg);
}

/** The coverage-guided run (test/fuzz/cli.ts, TypeScript loaded by test/fuzz/register.js); its exit status. */
function guided() {
  const root = path.resolve(__dirname, '..');
  const r = spawnSync(process.execPath, ['-r', path.join(root, 'test/fuzz/register.js'), path.join(root, 'test/fuzz/cli.ts')], {
    stdio: 'inherit',
    cwd: root,
    env: { ...process.env, ...options.env },
  });
  return r.status ?? 1;
}

if (!options.properties) process.exit(guided());

const runs = Number(process.env.FUZZ_RUNS) > 0 ? Math.floor(Number(process.env.FUZZ_RUNS)) : 20000;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-fuzz-'));
const report = path.join(dir, 'report.json');
const jest = require.resolve('jest/bin/jest');
const args = [jest, '--testPathPattern', '\\.fuzz\\.spec\\.ts$', '--json', '--outputFile', report, ...jestArgs];
const started = Date.now();
const result = spawnSync(process.execPath, args, {
  stdio: 'inherit',
  env: { ...process.env, FUZZ_RUNS: String(runs), FUZZ_REPORT_DIR: dir },
});
let summary;
try {
  summary = JSON.parse(fs.readFileSync(report, 'utf8'));
} catch {
  console.error('fuzz: jest wrote no report');
  process.exit(result.status ?? 1);
}
// test/helpers/fuzz.ts appends `<cases run> <1 if a counterexample was found>` per property.
let cases = 0;
let properties = 0;
let counterexamples = 0;
const recorded = path.join(dir, 'cases.txt');
for (const line of fs.existsSync(recorded) ? fs.readFileSync(recorded, 'utf8').split('\n') : []) {
  const [n, failed] = line.split(' ').map(Number);
  if (line.trim() === '' || !Number.isFinite(n)) continue;
  properties += 1;
  cases += n;
  counterexamples += failed;
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(
  `fuzz: ${cases} cases run over ${properties} properties (${runs} runs each) in ${summary.numTotalTestSuites} files; ` +
    `${counterexamples} counterexamples found, ${summary.numFailedTests} failing tests; ${seconds} s`,
);
for (const file of summary.testResults) {
  for (const t of file.assertionResults) {
    if (t.status === 'failed') console.log(`  FAILED ${path.relative(process.cwd(), file.name)}: ${t.fullName}`);
  }
}
fs.rmSync(dir, { recursive: true, force: true });
const propertiesFailed = summary.numFailedTests > 0 || result.status !== 0;
const guidedStatus = options.guided ? guided() : 0;
process.exit(propertiesFailed || guidedStatus !== 0 ? 1 : 0);
