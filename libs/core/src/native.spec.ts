import * as fs from 'node:fs';
import { withEnv } from '../../../test/helpers/cloud-emulators';
import { loadNativeAddon, nativeAddonPath, nativeAddonStates, nativeHelpersOffLine } from './native';

describe('native helpers', () => {
  it('finds malloc-trim under the repository root by its folder name', () => {
    const file = nativeAddonPath('malloc-trim');
    expect(file).toMatch(/native\/malloc-trim\/build\/Release\/malloc_trim\.node$/);
  });

  it('loads malloc-trim once built (npm run build), and trim() answers whether memory went back', () => {
    const built = fs.existsSync(nativeAddonPath('malloc-trim')!);
    const addon = loadNativeAddon<{ trim(): boolean }>('malloc-trim');
    expect(addon !== undefined).toBe(built);
    const state = nativeAddonStates().find((s) => s.name === 'malloc-trim');
    expect(state).toEqual(built ? { name: 'malloc-trim', loaded: true } : expect.objectContaining({ loaded: false }));
    if (addon) {
      expect(typeof addon.trim()).toBe('boolean');
      // The same object every time: loaded once.
      expect(loadNativeAddon('malloc-trim')).toBe(addon);
    }
  });

  it('answers undefined for an addon that is not built, and says why in the start-up line', () => {
    expect(loadNativeAddon('no-such-helper')).toBeUndefined();
    expect(nativeHelpersOffLine([{ name: 'malloc-trim', loaded: true }, { name: 'x', loaded: false, reason: 'not built' }]))
      .toBe('native helpers off: x (not built); Nereid runs without them');
    expect(nativeHelpersOffLine([{ name: 'malloc-trim', loaded: true }])).toBeUndefined();
  });

  /** A fresh copy of ./native, loaded with `env` set (its off switches are read when an addon first loads). */
  function withFreshNative(env: Record<string, string>, check: (fresh: typeof import('./native')) => void): void {
    const restore = withEnv(env);
    try {
      jest.isolateModules(() => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        check(require('./native') as typeof import('./native'));
      });
    } finally {
      restore();
    }
  }

  it('leaves out the addons NEREID_NATIVE_OFF names', () => {
    withFreshNative({ NEREID_NATIVE_OFF: 'other,malloc-trim' }, (fresh) => {
      expect(fresh.loadNativeAddon('malloc-trim')).toBeUndefined();
      expect(fresh.nativeHelpersOffLine()).toContain('malloc-trim (NEREID_NATIVE_OFF)');
    });
  });

  it('loads none with NEREID_NATIVE=0', () => {
    withFreshNative({ NEREID_NATIVE: '0' }, (fresh) => {
      expect(fresh.loadNativeAddon('malloc-trim')).toBeUndefined();
      expect(fresh.nativeHelpersOffLine()).toContain('malloc-trim (NEREID_NATIVE=0)');
    });
  });
});
