import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BlobBuilder } from './frames';
import { ShmPool } from './shm-pool';
import { PYTHON_DIR } from './stub-process';
import { decodeInlineTensors, decodeTensors, encodeTensors, type ShmSettings, type WireTensor } from './wire-tensors';

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

describe("decoding the stub's descriptors: sized against the bytes before anything is allocated (issue 16)", () => {
  it('refuses a BYTES shape that claims more elements than its bytes can hold, and a bad shape', () => {
    const blob = Buffer.from([2, 0, 0, 0, 104, 105]);
    expect(decodeInlineTensors([['S', 'BYTES', [1], 6, 0]], blob)[0].data).toEqual([Buffer.from('hi')]);
    // 50 M elements claimed for 6 bytes: refused before an array of 50 M slots is made.
    expect(() => decodeInlineTensors([['S', 'BYTES', [50_000_000], 6, 0]], blob)).toThrow("BYTES tensor 'S' is shorter than its 50000000 elements");
    expect(() => decodeInlineTensors([['S', 'BYTES', [-1], 6, 0]], blob)).toThrow("python model returned tensor 'S' with a bad shape");
    expect(() => decodeInlineTensors([['F', 'FP32', [2 ** 60, 2 ** 60], 6, 0]], blob)).toThrow("python model returned tensor 'F' with a bad shape");
  });

  it('refuses a shm file shorter than the length the stub claims, before allocating that length', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-wire-'));
    try {
      const file = path.join(dir, 'p-1');
      fs.writeFileSync(file, Buffer.from(Float32Array.of(1, 2).buffer));
      const shm: ShmSettings = { dir, prefix: 'p-', threshold: 1, pool: new ShmPool(dir, 'p-'), released: [] };
      const desc = (length: number, shape: number[]): WireTensor => ['F', 'FP32', shape, length, file];
      expect((await decodeTensors([desc(8, [2])], Buffer.alloc(0), shm))[0].data).toEqual(Float32Array.of(1, 2));
      // 1 TiB claimed: a RangeError (or a huge buffer) before; now the file's size decides.
      await expect(decodeTensors([desc(2 ** 40, [2 ** 38])], Buffer.alloc(0), shm)).rejects.toThrow("the shared-memory file of tensor 'F' is shorter than 1099511627776 bytes");
      // The errors reach the client: they name the tensor, never the stub's shm file (its prefix).
      for (const bad of [desc(2 ** 40, [2 ** 38]), desc(-1, [2]), ['F', 'FP32', [2], 8, path.join(dir, 'elsewhere')] as WireTensor]) {
        const e = await decodeTensors([bad], Buffer.alloc(0), shm).then(() => undefined, (err: Error) => err);
        expect(e?.message).toContain("tensor 'F'");
        expect(e?.message).not.toContain(dir);
      }
      await expect(decodeTensors([desc(-1, [2])], Buffer.alloc(0), shm)).rejects.toThrow('python stub sent a bad byte length');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
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
