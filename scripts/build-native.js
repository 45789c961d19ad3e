#!/usr/bin/env node
'use strict';
// Builds every native addon (native/<name>/binding.gyp) with npm's node-gyp, offline, into
// native/<name>/build/Release/. The addons are optional helpers: when a C toolchain or Node's headers
// are missing, or a build fails, this prints one warning line and exits 0, and Nereid runs without
// them (libs/core/src/native.ts returns undefined; start-up logs which helpers are off).
// An addon whose sources did not change since its last build is not rebuilt.
// NEREID_SKIP_NATIVE=1 skips them all.
const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
// NEREID_NATIVE_DIR: another folder of addons (test/native-build.e2e-spec.ts builds copies there).
const nativeDir = process.env.NEREID_NATIVE_DIR ? path.resolve(process.env.NEREID_NATIVE_DIR) : path.join(root, 'native');
const STAMP = 'nereid-sources.sha256';
const LOG = 'nereid-build.log';

function warn(text) {
  console.error(`nereid: warning: ${text}`);
}

/** The addons: every folder of native/ with a binding.gyp. */
function addons() {
  if (!fs.existsSync(nativeDir)) return [];
  return fs.readdirSync(nativeDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(nativeDir, d.name, 'binding.gyp')))
    .map((d) => d.name)
    .sort();
}

/** A digest of an addon's sources (everything in its folder but build/) and of the platform. */
function sourcesDigest(dir) {
  const hash = crypto.createHash('sha256').update(`${process.platform} ${process.arch}\n`);
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(rel, e.name);
      if (rel === '' && e.name === 'build') continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) hash.update(`${p}\n`).update(fs.readFileSync(path.join(dir, p)));
    }
  };
  walk('');
  return hash.digest('hex');
}

function built(dir) {
  const release = path.join(dir, 'build', 'Release');
  return fs.existsSync(release) && fs.readdirSync(release).some((f) => f.endsWith('.node'));
}

function onPath(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** npm's bundled node-gyp: npm scripts name it; else beside the node binary (npm's global prefix). */
function findNodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    path.resolve(path.dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
    path.resolve(path.dirname(process.execPath), 'node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
  ];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  const r = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' });
  const global = r.status === 0 ? path.join(r.stdout.trim(), 'npm/node_modules/node-gyp/bin/node-gyp.js') : '';
  return global && fs.existsSync(global) ? global : undefined;
}

/** Node's headers without a download: npm's nodedir, else the prefix node was installed under. */
function findNodeDir() {
  const candidates = [process.env.npm_config_nodedir, path.resolve(path.dirname(process.execPath), '..'), '/usr', '/usr/local'];
  for (const c of candidates) if (c && fs.existsSync(path.join(c, 'include', 'node', 'node_api.h'))) return c;
  return undefined;
}

/** What is missing to build any addon here, or undefined. */
function missingToolchain() {
  const missing = [];
  if (!onPath('make')) missing.push('make');
  if (!(process.env.CC ? onPath(process.env.CC.split(' ')[0]) : onPath('cc') || onPath('gcc') || onPath('clang'))) missing.push('a C compiler');
  if (!onPath('python3') && !onPath('python')) missing.push('python3 (for node-gyp)');
  const nodeGyp = findNodeGyp();
  if (!nodeGyp) missing.push("npm's node-gyp");
  const nodeDir = findNodeDir();
  if (!nodeDir) missing.push("Node's headers (include/node/node_api.h)");
  return { missing, nodeGyp, nodeDir };
}

function main() {
  const names = addons();
  if (names.length === 0) return;
  if (process.env.NEREID_SKIP_NATIVE === '1') return;
  const stale = names.filter((n) => {
    const dir = path.join(nativeDir, n);
    const stamp = path.join(dir, 'build', STAMP);
    return !built(dir) || !fs.existsSync(stamp) || fs.readFileSync(stamp, 'utf8') !== sourcesDigest(dir);
  });
  if (stale.length === 0) return;
  const { missing, nodeGyp, nodeDir } = missingToolchain();
  if (missing.length > 0) {
    warn(`native helpers (${stale.join(', ')}) not built: ${missing.join(', ')} not found; Nereid runs without them ` +
      '(install a C toolchain, e.g. apt-get install g++ make python3, and run npm run build).');
    return;
  }
  for (const name of stale) {
    const dir = path.join(nativeDir, name);
    const r = spawnSync(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodeDir}`, '--release'], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, npm_config_offline: 'true' },
    });
    const log = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`;
    if (r.status === 0 && built(dir)) {
      fs.writeFileSync(path.join(dir, 'build', STAMP), sourcesDigest(dir));
      continue;
    }
    fs.mkdirSync(path.join(dir, 'build'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'build', LOG), log);
    // A half-built addon must not be loaded.
    fs.rmSync(path.join(dir, 'build', 'Release'), { recursive: true, force: true });
    warn(`native helper ${name} failed to build; Nereid runs without it (node-gyp's output: ${path.relative(root, path.join(dir, 'build', LOG))}).`);
  }
}

try {
  main();
} catch (e) {
  // The server builds and runs without its native helpers: never fail the build for them.
  warn(`native helpers not built: ${e instanceof Error ? e.message : String(e)}; Nereid runs without them.`);
}
