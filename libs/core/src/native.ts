import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Nereid's optional native helpers: the N-API addons under `native/<name>/` that scripts/build-native.js
 * builds when a C toolchain is there. Each one only makes something cheaper or returns memory; every
 * caller has a path without it, so a missing addon is a start-up log line, not an error.
 *
 * An addon is found by convention: `native/<name>/build/Release/<name with '-' as '_'>.node`
 * (its binding.gyp's target_name), under the repository root (the folder with package.json and native/,
 * found from this file in both libs/ and dist/libs/). NEREID_NATIVE=0 loads none, NEREID_NATIVE_OFF=<name>[,<name>...]
 * leaves out the ones named (to compare with and without).
 */

/** Why an addon is not loaded: not built (no toolchain, a failed build), switched off, or failing to load. */
export interface NativeAddonState {
  name: string;
  loaded: boolean;
  /** Set when not loaded. */
  reason?: string;
}

const loaded = new Map<string, { addon?: object; state: NativeAddonState }>();
let rootDir: string | null | undefined;

/** The repository root: the nearest folder above this file with package.json and native/. */
function nativeRoot(): string | undefined {
  if (rootDir === undefined) {
    rootDir = null;
    for (let dir = __dirname, i = 0; i < 8; i++, dir = path.dirname(dir)) {
      if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'native'))) {
        rootDir = dir;
        break;
      }
    }
  }
  return rootDir ?? undefined;
}

/** The built file of addon `name`. */
export function nativeAddonPath(name: string, root = nativeRoot()): string | undefined {
  return root === undefined ? undefined : path.join(root, 'native', name, 'build', 'Release', `${name.replace(/-/g, '_')}.node`);
}

/** Addon `name` (loaded once), or undefined when it is not built, switched off or fails to load. */
export function loadNativeAddon<T extends object>(name: string): T | undefined {
  let entry = loaded.get(name);
  if (!entry) {
    entry = load(name);
    loaded.set(name, entry);
  }
  return entry.addon as T | undefined;
}

function load(name: string): { addon?: object; state: NativeAddonState } {
  const off = (reason: string) => ({ state: { name, loaded: false, reason } });
  if (process.env.NEREID_NATIVE === '0') return off('NEREID_NATIVE=0');
  if ((process.env.NEREID_NATIVE_OFF ?? '').split(',').includes(name)) return off('NEREID_NATIVE_OFF');
  const file = nativeAddonPath(name);
  if (file === undefined || !fs.existsSync(file)) return off('not built (npm run build needs a C toolchain)');
  try {
    // A real require of a file outside the bundle: the path is known only at run time.
    const addon = require(file) as object;
    return { addon, state: { name, loaded: true } };
  } catch (e) {
    return off(`failed to load: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
}

/** Every addon the repository has (a folder of native/ with a binding.gyp) and whether it loads. */
export function nativeAddonStates(): NativeAddonState[] {
  const root = nativeRoot();
  if (root === undefined) return [];
  const dir = path.join(root, 'native');
  const names = fs.readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, 'binding.gyp')))
    .map((d) => d.name)
    .sort();
  return names.map((n) => {
    loadNativeAddon(n);
    return loaded.get(n)!.state;
  });
}

/** One line for the start-up log naming the helpers that are off and why, or undefined when all load. */
export function nativeHelpersOffLine(states = nativeAddonStates()): string | undefined {
  const off = states.filter((s) => !s.loaded);
  if (off.length === 0) return undefined;
  return `native helpers off: ${off.map((s) => `${s.name} (${s.reason})`).join(', ')}; Nereid runs without them`;
}
