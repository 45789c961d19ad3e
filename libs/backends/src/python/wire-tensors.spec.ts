import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { BlobBuilder } from './frames';
import { ShmPool } from './shm-pool';
import { PYTHON_DIR } from './stub-process';
import { encodeTensors, type ShmSettings } from './wire-tensors';

describe('encodeTensors', () => {
  const tensor = { name: 'X', datatype: 'FP32' as const, shape: [4], data: Float32Array.from([1, 2, 3, 4]) };

  it('puts tensors under the threshold inline', () => {
    const blob = new BlobBuilder();
    const dir = '/nonexistent-nereid-shm';
    const shm: ShmSettings = { dir, prefix: 'p-', threshold: 1 << 20, pool: new ShmPool(dir, 'p-'), released: [] };
    const { descs, pending } = encodeTensors([tensor], blob, shm);
    expect(pending).toBeUndefined();
    expect(descs).toEqual([['X', 'FP32', [4], 16, 0]]);
  });

  it('falls back to inline bytes when the shared-memory folder cannot be written', async () => {
    const blob = new BlobBuilder();
    const dir = '/nonexistent-nereid-shm';
    const shm: ShmSettings = { dir, prefix: 'p-', threshold: 1, pool: new ShmPool(dir, 'p-'), released: [] };
    const { descs, pending } = encodeTensors([tensor], blob, shm);
    expect(descs[0][4]).toBe(path.join(dir, 'p-n1'));
    await pending;
    expect(descs).toEqual([['X', 'FP32', [4], 16, 0]]);
    expect(blob.size).toBe(16);
  });
});

describe('the stub side of the same fallback', () => {
  it('sends a large output inline when its shared-memory folder cannot be written', () => {
    const script = [
      'import sys, os',
      `sys.path.insert(0, ${JSON.stringify(PYTHON_DIR)})`,
      'import _nereid_ipc as ipc',
      'conn = ipc.Connection(1, "/nonexistent-nereid-shm", "p-", 1)',
      'desc = conn.builder().add("Y", "UINT8", [3], b"abc")',
      'print(desc)',
    ].join('\n');
    const r = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe("['Y', 'UINT8', [3], 3, 0]");
  });
});
