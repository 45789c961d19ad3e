import * as fs from 'node:fs';
import { randomBytes } from 'node:crypto';

/**
 * A client's POSIX shared memory object, as tritonclient.utils.shared_memory makes one:
 * `create_shared_memory_region(name, key, byte_size)` is shm_open(key, O_CREAT) + ftruncate; its
 * bytes are then set and read in place. Node cannot map memory, so the test reads and writes the
 * object's file under /dev/shm: the same bytes a mapping would see.
 */
export class ShmObject {
  readonly key: string;
  readonly file: string;

  constructor(label: string, byteSize: number) {
    const name = `nereid-e2e-${label}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.key = `/${name}`;
    this.file = `/dev/shm/${name}`;
    fs.writeFileSync(this.file, Buffer.alloc(byteSize));
  }

  /** set_shared_memory_region(handle, [array], offset) */
  set(offset: number, data: ArrayBufferView): void {
    const fd = fs.openSync(this.file, 'r+');
    try {
      fs.writeSync(fd, new Uint8Array(data.buffer, data.byteOffset, data.byteLength), 0, data.byteLength, offset);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** get_contents_as_numpy(handle, np.int32, shape, offset) */
  int32s(offset: number, count: number): number[] {
    const bytes = fs.readFileSync(this.file).subarray(offset, offset + count * 4);
    return [...new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))];
  }

  /** destroy_shared_memory_region(handle): shm_unlink. */
  destroy(): void {
    fs.rmSync(this.file, { force: true });
  }
}

/** INPUT0 = 0..15 and INPUT1 = 1s, as Triton's simple_*_shm_client.py send them. */
/** The objects one test file makes, destroyed together at its end. */
export class ShmObjects {
  private readonly made: ShmObject[] = [];

  /** A new object, destroyed by `destroyAll` (bound: usable as a plain function). */
  readonly make = (label: string, byteSize: number): ShmObject => {
    const o = new ShmObject(label, byteSize);
    this.made.push(o);
    return o;
  };

  destroyAll(): void {
    for (const o of this.made.splice(0)) o.destroy();
  }
}

export const INPUT0 = Int32Array.from({ length: 16 }, (_, i) => i);
export const INPUT1 = new Int32Array(16).fill(1);

/** The descriptors of this process that still point at `file` (what a server that let go of a region no longer holds). */
export function descriptorsOn(file: string): number {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(file)) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}
