import * as fs from 'node:fs';
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

  it('leaves out the addons NEREID_NATIVE_OFF names', () => {
    const saved = process.env.NEREID_NATIVE_OFF;
    process.env.NEREID_NATIVE_OFF = 'other,malloc-trim';
    try {
      jest.isolateModules(() => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const fresh = require('./native') as typeof import('./native');
        expect(fresh.loadNativeAddon('malloc-trim')).toBeUndefined();
        expect(fresh.nativeHelpersOffLine()).toContain('malloc-trim (NEREID_NATIVE_OFF)');
      });
    } finally {
      if (saved === undefined) delete process.env.NEREID_NATIVE_OFF;
      else process.env.NEREID_NATIVE_OFF = saved;
    }
  });

  it('loads none with NEREID_NATIVE=0', () => {
    const saved = process.env.NEREID_NATIVE;
    process.env.NEREID_NATIVE = '0';
    try {
      jest.isolateModules(() => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const fresh = require('./native') as typeof import('./native');
        expect(fresh.loadNativeAddon('malloc-trim')).toBeUndefined();
        expect(fresh.nativeHelpersOffLine()).toContain('malloc-trim (NEREID_NATIVE=0)');
      });
    } finally {
      if (saved === undefined) delete process.env.NEREID_NATIVE;
      else process.env.NEREID_NATIVE = saved;
    }
  });
});
