import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { folderFingerprint, versionSource } from './lifecycle-sources';

function modelFolder(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'nereid-fp-'));
  writeFileSync(path.join(dir, 'config.pbtxt'), 'name: "m"');
  for (const v of ['1', '2']) {
    mkdirSync(path.join(dir, v));
    writeFileSync(path.join(dir, v, 'model.onnx'), `model ${v}`);
  }
  mkdirSync(path.join(dir, 'warmup'));
  writeFileSync(path.join(dir, 'warmup', 'x.bin'), 'x');
  return dir;
}

describe('folderFingerprint', () => {
  it('tells the shared files from each version folder', async () => {
    const dir = modelFolder();
    const before = await folderFingerprint(dir);
    expect([...before.versions.keys()].sort()).toEqual([1, 2]);
    expect(before.shared).toContain('config.pbtxt');
    expect(before.shared).toContain('warmup/x.bin');
    expect(before.shared).not.toContain('model.onnx');
    expect(await folderFingerprint(dir)).toEqual(before);

    // A file of version 2 changes: only version 2's source and the whole folder's fingerprint move.
    writeFileSync(path.join(dir, '2', 'model.onnx'), 'model 2, retrained');
    const after = await folderFingerprint(dir);
    expect(after.all).not.toBe(before.all);
    expect(versionSource('cfg', after, 1)).toBe(versionSource('cfg', before, 1));
    expect(versionSource('cfg', after, 2)).not.toBe(versionSource('cfg', before, 2));

    // A shared file (same size, new time) changes every version's source.
    const later = new Date(Date.now() + 5000);
    utimesSync(path.join(dir, 'warmup', 'x.bin'), later, later);
    const touched = await folderFingerprint(dir);
    expect(versionSource('cfg', touched, 1)).not.toBe(versionSource('cfg', after, 1));
  });

  it('a new version folder adds a version and leaves the others alone', async () => {
    const dir = modelFolder();
    const before = await folderFingerprint(dir);
    mkdirSync(path.join(dir, '3'));
    writeFileSync(path.join(dir, '3', 'model.onnx'), 'model 3');
    const after = await folderFingerprint(dir);
    expect(after.versions.get(3)).toContain('3/model.onnx');
    expect(after.versions.get(1)).toBe(before.versions.get(1));
    expect(after.shared).toBe(before.shared);
  });

  it('a folder that is gone has an empty fingerprint', async () => {
    const fp = await folderFingerprint(path.join(tmpdir(), 'nereid-fp-no-such-folder'));
    expect(fp).toEqual({ all: '', shared: '', versions: new Map() });
  });
});
