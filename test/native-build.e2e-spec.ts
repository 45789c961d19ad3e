/**
 * scripts/build-native.js, as `npm run build` runs it, on copies of native/malloc-trim in a temporary
 * folder (NEREID_NATIVE_DIR): it builds an addon, does not rebuild one whose sources did not change,
 * and never fails the build: without a toolchain, or when an addon does not compile, it prints one
 * warning line, exits 0 and leaves no addon to load.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.resolve(__dirname, '..');
const script = path.join(root, 'scripts/build-native.js');

function build(dir: string, env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8', env: { ...process.env, NEREID_SKIP_NATIVE: '', ...env, NEREID_NATIVE_DIR: dir } });
  return { status: r.status, stderr: r.stderr.trim(), stdout: r.stdout.trim() };
}

const addon = (dir: string, name: string) => path.join(dir, name, 'build', 'Release', `${name.replace(/-/g, '_')}.node`);

/** A folder with copies of malloc-trim: as it is, and under another name. */
function copies(...names: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-native-'));
  for (const n of names) {
    fs.cpSync(path.join(root, 'native/malloc-trim/src'), path.join(dir, n, 'src'), { recursive: true });
    const gyp = fs.readFileSync(path.join(root, 'native/malloc-trim/binding.gyp'), 'utf8');
    fs.writeFileSync(path.join(dir, n, 'binding.gyp'), gyp.replace('"malloc_trim"', `"${n.replace(/-/g, '_')}"`));
  }
  return dir;
}

const hasToolchain = ['make', 'cc'].every((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0);

describe('scripts/build-native.js', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  (hasToolchain ? it : it.skip)('builds every addon folder, then leaves them alone until their sources change', () => {
    const dir = copies('trim-a');
    dirs.push(dir);
    expect(build(dir)).toEqual({ status: 0, stderr: '', stdout: '' });
    const file = addon(dir, 'trim-a');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    expect(typeof (require(file) as { trim(): boolean }).trim()).toBe('boolean');
    const built = fs.statSync(file).mtimeMs;
    expect(build(dir).status).toBe(0);
    expect(fs.statSync(file).mtimeMs).toBe(built);
    fs.appendFileSync(path.join(dir, 'trim-a/src/malloc_trim.c'), '\n// changed\n');
    expect(build(dir).status).toBe(0);
    expect(fs.statSync(file).mtimeMs).toBeGreaterThan(built);
  }, 60_000);

  it('without make and a C compiler: one warning line, exit 0, nothing built', () => {
    const dir = copies('trim-a', 'trim-b');
    dirs.push(dir);
    // A PATH with sh alone (node is started by its full path).
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-path-'));
    dirs.push(bin);
    fs.symlinkSync(spawnSync('sh', ['-c', 'command -v sh'], { encoding: 'utf8' }).stdout.trim(), path.join(bin, 'sh'));
    const r = build(dir, { PATH: bin, CC: '' });
    expect(r.status).toBe(0);
    expect(r.stderr.split('\n')).toEqual([expect.stringMatching(/^nereid: warning: native helpers \(trim-a, trim-b\) not built: make, a C compiler.* not found; Nereid runs without them/)]);
    expect(fs.existsSync(addon(dir, 'trim-a'))).toBe(false);
  });

  (hasToolchain ? it : it.skip)('an addon that does not compile: one warning line naming its log, exit 0, the others built', () => {
    const dir = copies('trim-a', 'trim-bad');
    dirs.push(dir);
    fs.appendFileSync(path.join(dir, 'trim-bad/src/malloc_trim.c'), '\nnot C at all\n');
    const r = build(dir);
    expect(r.status).toBe(0);
    expect(r.stderr.split('\n')).toEqual([expect.stringMatching(/^nereid: warning: native helper trim-bad failed to build; Nereid runs without it \(node-gyp's output: .*trim-bad\/build\/nereid-build\.log\)/)]);
    expect(fs.readFileSync(path.join(dir, 'trim-bad/build/nereid-build.log'), 'utf8')).toContain('not C at all');
    expect(fs.existsSync(addon(dir, 'trim-bad'))).toBe(false);
    expect(fs.existsSync(addon(dir, 'trim-a'))).toBe(true);
  }, 60_000);
});
