#!/usr/bin/env node
'use strict';
// Checks Nereid's prerequisites up front and says clearly what is missing.
// Usage: check-prereqs.js [--install] [--redis]
const { spawnSync } = require('node:child_process');

const args = new Set(process.argv.slice(2));
const problems = [];
const warnings = [];

const major = Number(process.versions.node.split('.')[0]);
if (major < 20) problems.push(`Node.js 20 or newer is required (found ${process.version}).`);

if (!args.has('--install')) {
  const py = process.env.NEREID_PYTHON || 'python3';
  const r = spawnSync(py, ['-c', 'import numpy, sys; print(sys.version.split()[0])'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    warnings.push(`${py} with numpy was not found: Python models (backend "python") will fail to load. ` +
      'Install python3 and numpy (e.g. apt-get install python3-numpy) or set NEREID_PYTHON.');
  }
  // Optional: native/'s addons (scripts/build-native.js) need make and a C compiler; without them
  // Nereid runs, but e.g. memory freed after a burst of requests stays with the C allocator.
  const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
  if (process.env.NEREID_SKIP_NATIVE !== '1' && (!has('make') || !(has('cc') || has('gcc') || has('clang')))) {
    warnings.push('make and a C compiler were not found: the optional native helpers (native/) are not built, and ' +
      'Nereid runs without them (memory freed after a burst stays with the C allocator). Install them ' +
      '(e.g. apt-get install g++ make) and run npm run build.');
  }
  if (args.has('--redis') && !process.env.REDIS_URL) {
    const rs = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
    if (rs.error || rs.status !== 0) {
      problems.push('redis-server was not found on PATH: the message-port and distributed tests need it ' +
        '(apt-get install redis-server) or REDIS_URL pointing at a Redis server.');
    }
  }
}

for (const w of warnings) console.error(`nereid: warning: ${w}`);
if (problems.length > 0) {
  for (const p of problems) console.error(`nereid: ${p}`);
  process.exit(1);
}
