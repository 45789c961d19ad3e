#!/usr/bin/env node
'use strict';
// Compiles apps/ and libs/ to dist/ with SWC (path aliases rewritten to relative imports), then the
// optional native helpers (scripts/build-native.js: a warning, not a failure, without a C toolchain).
// Type checking is separate: `npm run typecheck` (also part of `npm test`).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
const swc = require.resolve('@swc/cli/bin/swc.js');
const r = spawnSync(process.execPath, [swc, 'apps', 'libs', '-d', 'dist', '--config-file', '.swcrc',
  '--ignore', '**/*.spec.ts', '--copy-files', '--quiet'], { cwd: root, stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
const main = path.join(root, 'dist/apps/nereid/src/main.js');
if (fs.existsSync(main)) fs.chmodSync(main, 0o755);
const native = spawnSync(process.execPath, [path.join(__dirname, 'build-native.js')], { cwd: root, stdio: 'inherit' });
if (native.status !== 0) process.exit(native.status ?? 1);
