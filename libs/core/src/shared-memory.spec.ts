import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadNativeAddon } from './native';
import { shmKeyFile, SystemSharedMemory } from './shared-memory';

/** Whether native/shm-map is built here (npm run build with a C toolchain). */
const MAPPED = loadNativeAddon('shm-map') !== undefined;

/** Real POSIX shared memory objects under /dev/shm, as a client's shm_open creates them. */
const DIR = '/dev/shm';
const made: string[] = [];

function object(bytes: number): { key: string; file: string } {
  const name = `nereid-spec-${process.pid}-${randomBytes(4).toString('hex')}`;
  const file = path.join(DIR, name);
  fs.writeFileSync(file, Buffer.alloc(bytes));
  made.push(file);
  return { key: `/${name}`, file };
}

function errorOf(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error('expected an error');
}

afterAll(() => {
  for (const f of made) fs.rmSync(f, { force: true, recursive: true });
});

describe('shmKeyFile', () => {
  it.each([
    ['/region', '/dev/shm/region'],
    ['/a.b-c_d', '/dev/shm/a.b-c_d'],
  ])('%s names a file directly under /dev/shm', (key, file) => {
    expect(shmKeyFile(DIR, key)).toBe(file);
  });

  it.each(['region', '/', '//x', '/a/b', '/..', '/.', '/x/../../etc/passwd', '/a..b', '/nul\0x', `/${'x'.repeat(256)}`])(
    'refuses %j',
    (key) => {
      expect(shmKeyFile(DIR, key)).toBeUndefined();
    },
  );
});

// Every case with regions mapped (when the addon is built) and with positional reads and writes.
describe.each([
  ['mapped', { mapRegions: true }],
  ['positional I/O', { mapRegions: false }],
])('SystemSharedMemory (%s)', (_, mode) => {
  it('refuses registration while disabled, in Triton words, and lists no region', () => {
    const shm = new SystemSharedMemory({ enabled: false });
    const { key } = object(64);
    const e = errorOf(() => shm.register('r', key, 0, 64));
    expect(e.code).toBe('UNSUPPORTED');
    expect(e.message).toBe("Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.");
    expect(errorOf(() => shm.unregister()).code).toBe('UNSUPPORTED');
    expect(shm.status()).toEqual([]);
  });

  it('registers, reads, writes, lists and unregisters a region', () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true });
    const { key, file } = object(64);
    fs.writeFileSync(file, Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
    shm.register('r', key, 16, 32);
    expect(shm.status()).toEqual([{ name: 'r', key, offset: 16, byte_size: 32 }]);
    expect(shm.status('r')).toEqual([{ name: 'r', key, offset: 16, byte_size: 32 }]);

    const input = shm.slice('r', 4, 8);
    expect([...input.read()]).toEqual([20, 21, 22, 23, 24, 25, 26, 27]);
    input.release();

    const output = shm.slice('r', 8, 4);
    output.write(Uint8Array.from([9, 9, 9, 9]), 'OUT');
    output.release();
    expect([...fs.readFileSync(file).subarray(24, 28)]).toEqual([9, 9, 9, 9]);

    shm.unregister('r');
    expect(shm.status()).toEqual([]);
    expect(errorOf(() => shm.status('r'))).toMatchObject({ code: 'NOT_FOUND', message: "Unable to find system shared memory region: 'r'" });
    shm.unregister('r'); // unknown: nothing to do, as in Triton
  });

  it("checks Triton's bounds at registration and at every use", () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true });
    const { key } = object(64);
    expect(errorOf(() => shm.register('big', key, 8, 64))).toMatchObject({
      code: 'INVALID_ARG',
      message: "failed to register shared memory region 'big': invalid args",
    });
    shm.register('r', key, 0, 64);
    expect(errorOf(() => shm.register('r', key, 0, 8))).toMatchObject({ code: 'ALREADY_EXISTS', message: "shared memory region 'r' already in manager" });
    expect(errorOf(() => shm.slice('nope', 0, 4))).toMatchObject({ code: 'NOT_FOUND', message: "Unable to find shared memory region: 'nope'" });
    expect(errorOf(() => shm.slice('r', 64, 0))).toMatchObject({ code: 'INVALID_ARG', message: "Invalid offset for shared memory region: 'r'" });
    expect(errorOf(() => shm.slice('r', 60, 8))).toMatchObject({ code: 'INVALID_ARG', message: "Invalid offset + byte size for shared memory region: 'r'" });
    expect(errorOf(() => shm.slice('r', -1, 8)).message).toBe("Invalid offset for shared memory region: 'r'");
    expect(errorOf(() => shm.slice('r', 0, '18446744073709551615')).message).toBe("Invalid offset + byte size for shared memory region: 'r'");
    const slice = shm.slice('r', 0, 8);
    expect(errorOf(() => slice.write(new Uint8Array(12), 'OUTPUT0'))).toMatchObject({
      code: 'INTERNAL',
      message: "shared memory size specified with the request for output 'OUTPUT0' (8 bytes) should be at least 12 bytes to hold the results",
    });
    slice.release();
    shm.close();
  });

  it('never names the key in an error', () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true });
    const secret = `/nereid-spec-absent-${randomBytes(4).toString('hex')}`;
    for (const key of [secret, `${secret}/x`, '/triton_python_backend_shm_region_1', '/nereid-py-1-abc-n1']) {
      const e = errorOf(() => shm.register('r', key, 0, 8));
      expect(e.message).not.toContain(key.slice(1));
      expect(e.message).toContain("'r'");
    }
    expect(errorOf(() => shm.register('r', secret, 0, 8))).toMatchObject({ code: 'INTERNAL', message: "Unable to open shared memory region: 'r'" });
    expect(errorOf(() => shm.register('r', '/nereid-py-1-abc-n1', 0, 8)).message).toBe(
      "cannot register shared memory region 'r' as the key contains the reserved prefix 'nereid-py-'",
    );
  });

  it('does not follow a link planted under /dev/shm, nor open what is not a file', () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true });
    const { file } = object(8);
    const link = `${file}-link`;
    fs.symlinkSync('/etc/hostname', link);
    made.push(link);
    expect(errorOf(() => shm.register('r', `/${path.basename(link)}`, 0, 1)).message).toBe("Unable to open shared memory region: 'r'");
    const folder = `${file}-dir`;
    fs.mkdirSync(folder);
    made.push(folder);
    expect(errorOf(() => shm.register('r', `/${path.basename(folder)}`, 0, 0)).code).toMatch(/INTERNAL/);
    expect(shm.status()).toEqual([]);
  });

  it('keeps the object it opened: an unlinked region still serves, a new file under its name is not read', () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true });
    const { key, file } = object(8);
    fs.writeFileSync(file, Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]));
    shm.register('r', key, 0, 8);
    fs.unlinkSync(file);
    fs.writeFileSync(file, Buffer.alloc(8, 0xee));
    const slice = shm.slice('r', 0, 8);
    expect([...slice.read()]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    slice.release();
    shm.close();
  });

  it('refuses a region whose object was truncated after registration', () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true });
    const { key, file } = object(64);
    shm.register('r', key, 0, 64);
    fs.truncateSync(file, 16);
    const slice = shm.slice('r', 8, 16);
    expect(errorOf(() => slice.read())).toMatchObject({
      code: 'INVALID_ARG',
      message: "Invalid offset + byte size for shared memory region: 'r': its object was truncated after it was registered",
    });
    expect(errorOf(() => slice.write(new Uint8Array(16), 'O')).code).toBe('INVALID_ARG');
    expect(fs.statSync(file).size).toBe(16); // never grown by the server
    slice.release();
    shm.close();
  });

  it("a request's use: inputs read into pooled buffers reused after release, outputs bound, all let go at once", () => {
    const shm = new SystemSharedMemory({ enabled: true, mapRegions: false });
    const { key, file } = object(32);
    fs.writeFileSync(file, Buffer.from(Array.from({ length: 32 }, (_, i) => i)));
    shm.register('r', key, 0, 32);
    const first = shm.use();
    const a = first.readInput('r', 0, 16, 'IN');
    expect([...a.subarray(0, 4)]).toEqual([0, 1, 2, 3]);
    first.bindOutput('OUT', 'r', 16, 16);
    first.output('OUT')!.write(Uint8Array.from([42]), 'OUT');
    expect(first.output('NONE')).toBeUndefined();
    shm.unregister('r');
    first.release();
    first.release(); // once only
    shm.register('r', key, 0, 32);
    const second = shm.use();
    const b = second.readInput('r', 16, 16, 'IN');
    expect(b.buffer).toBe(a.buffer); // the pooled store came back
    expect(b[0]).toBe(42);
    second.release();
    shm.close();
  });

  it("bounds the bytes one request reads before allocating them (a sparse object may be huge)", () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true, maxInputBytes: 24 });
    const { key, file } = object(0);
    fs.truncateSync(file, 1 << 40); // 1 TiB, sparse: costs nothing until read
    shm.register('huge', key, 0, 1 << 40);
    const use = shm.use();
    expect(use.readInput('huge', 0, 16, 'A').byteLength).toBe(16);
    expect(errorOf(() => use.readInput('huge', 16, 16, 'B'))).toMatchObject({
      code: 'INVALID_ARG',
      message:
        "shared memory input 'B' of 16 bytes takes the request's inputs past the maximum allowed input size of 24 bytes. Use --http-max-input-size to increase the limit.",
    });
    expect(errorOf(() => shm.use().readInput('huge', 0, 2 ** 40, 'C')).code).toBe('INVALID_ARG');
    use.release();
    shm.close();
  });

  it('closes the descriptor only when the last request using an unregistered region is done', () => {
    const shm = new SystemSharedMemory({ ...mode, enabled: true });
    const { key, file } = object(8);
    shm.register('r', key, 0, 8);
    const slice = shm.slice('r', 0, 8);
    shm.unregister('r');
    expect(shm.status()).toEqual([]);
    slice.write(Uint8Array.from([7, 7, 7, 7, 7, 7, 7, 7]), 'O');
    slice.release();
    slice.release(); // once only
    expect([...fs.readFileSync(file)]).toEqual([7, 7, 7, 7, 7, 7, 7, 7]);
    // The name is free again.
    shm.register('r', key, 0, 8);
    shm.close();
    expect(shm.status()).toEqual([]);
  });
});

(MAPPED ? describe : describe.skip)('SystemSharedMemory with regions mapped (native/shm-map)', () => {
  it('reads an input in place: the tensor is a view of the client pages, let go (detached) once unregistered and released', () => {
    const shm = new SystemSharedMemory({ enabled: true });
    const { key, file } = object(4096 + 64);
    shm.register('r', key, 4096, 64);
    const use = shm.use();
    const input = use.readInput('r', 8, 16, 'IN');
    expect(input.byteLength).toBe(16);
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Uint8Array.from([5, 6, 7]), 0, 3, 4096 + 8); // the client writes after the read
    fs.closeSync(fd);
    expect([...input.subarray(0, 3)]).toEqual([5, 6, 7]);
    use.bindOutput('OUT', 'r', 32, 32);
    use.output('OUT')!.write(Uint8Array.from([1, 2]), 'OUT');
    expect([...fs.readFileSync(file).subarray(4096 + 32, 4096 + 34)]).toEqual([1, 2]);
    use.verifyInputs();
    shm.unregister('r');
    expect(input.byteLength).toBe(16); // still in use by the request
    use.release();
    expect(input.byteLength).toBe(0); // unmapped: no view reaches the range any more
    shm.close();
  });

  it('survives an object truncated while an input is read in place: zeros, then the error, then a fresh mapping', () => {
    const shm = new SystemSharedMemory({ enabled: true });
    const size = 1 << 20;
    const { key, file } = object(size);
    fs.writeFileSync(file, Buffer.alloc(size, 3));
    shm.register('r', key, 0, size);
    const use = shm.use();
    const input = use.readInput('r', 0, size, 'IN');
    expect(input[size - 1]).toBe(3);
    fs.truncateSync(file, 4096); // the client shrinks its object while "the model" reads the input
    let sum = 0;
    for (let i = 0; i < size; i += 4096) sum += input[i + 1]; // pages past the end: SIGBUS, handled
    expect(sum).toBe(3); // the first page only
    expect(errorOf(() => use.verifyInputs())).toMatchObject({
      code: 'INVALID_ARG',
      message: "Invalid offset + byte size for shared memory region: 'r': its object was truncated after it was registered",
    });
    use.release();
    // While too small, every use is refused before touching it; grown back, the region serves again.
    expect(errorOf(() => shm.use().readInput('r', 0, size, 'IN')).code).toBe('INVALID_ARG');
    fs.truncateSync(file, size);
    fs.writeFileSync(file, Buffer.alloc(size, 4));
    const again = shm.use();
    const fresh = again.readInput('r', 0, size, 'IN');
    expect(fresh[size - 1]).toBe(4);
    again.verifyInputs();
    again.release();
    shm.close();
  });

  it('answers an error for an output written while its object shrinks in another thread, and stays up', async () => {
    const { Worker } = await import('node:worker_threads');
    const shm = new SystemSharedMemory({ enabled: true });
    const size = 8 << 20;
    const { key, file } = object(size);
    shm.register('r', key, 0, size);
    // A thread that shrinks and regrows the object as fast as it can while outputs are written.
    const worker = new Worker(
      `const fs = require('node:fs'); const { workerData } = require('node:worker_threads');
       const end = Date.now() + 3000; while (Date.now() < end) { fs.truncateSync(workerData.file, 4096); fs.truncateSync(workerData.file, workerData.size); }`,
      { eval: true, workerData: { file, size } },
    );
    const done = new Promise((resolve) => worker.once('exit', resolve));
    const bytes = new Uint8Array(size).fill(9);
    const outcomes = { written: 0, truncated: 0 };
    const end = Date.now() + 2500;
    while (Date.now() < end) {
      const use = shm.use();
      use.bindOutput('OUT', 'r', 0, size);
      try {
        use.output('OUT')!.write(bytes, 'OUT');
        outcomes.written++;
      } catch (e) {
        expect((e as Error).message).toContain('its object was truncated after it was registered');
        outcomes.truncated++;
      }
      use.release();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await done;
    expect(outcomes.truncated).toBeGreaterThan(0);
    shm.close();
  });
});
