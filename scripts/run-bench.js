#!/usr/bin/env node
'use strict';
// `npm run bench`: builds, then runs every benchmark under bench/ one after the other (each one
// measures Nereid and its baseline in the same run and prints the ratio). Stops at the first failure.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const BENCHES = [
  ['bench/http-infer/run.js', '10'],
  ['bench/grpc-infer/run.js', '--seconds', '10'],
  ['bench/dynamic-batching/run.js', '10'],
  ['bench/python-backend/run.js'],
  ['bench/python-backend/bridge.js'],
  ['bench/startup/run.js', '3'],
  ['bench/sequence-batching/run.js'],
  ['bench/ensemble/run.js'],
  ['bench/reload/run.js', 'poll'],
  ['bench/transport/run.js', '5', '64'], // needs redis-server on PATH
];

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`bench: '${[cmd, ...args].join(' ')}' failed (exit ${r.status ?? r.signal})`);
    process.exit(1);
  }
}

run('npm', ['run', 'build']);
for (const [script, ...args] of BENCHES) {
  console.log(`\n=== ${script} ===`);
  run(process.execPath, [script, ...args]);
}
