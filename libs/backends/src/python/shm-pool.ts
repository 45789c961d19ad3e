import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';

interface PoolFile {
  path: string;
  handle: Promise<FileHandle>;
  capacity: number;
}

/** Free files kept for reuse, per stub (/dev/shm is often small: 64 MB in a default Docker container). */
const MAX_FREE = 2;

/**
 * The server's pool of shared-memory files for tensors it sends to one stub. Writing into a tmpfs
 * file that already has its pages is a plain copy; a fresh file costs a page allocation per 4 KiB
 * on top (about three times slower for 16 MB). The stub lists the files it no longer maps in a later
 * frame (`rel`), and they are reused.
 */
export class ShmPool {
  private counter = 0;
  private readonly free: PoolFile[] = [];
  private readonly busy = new Map<string, PoolFile>();

  constructor(
    private readonly dir: string,
    private readonly prefix: string,
  ) {}

  /** Takes a file for `bytes` and starts writing them; `written` settles when they are all in. */
  write(bytes: Uint8Array): { path: string; written: Promise<void> } {
    const file = this.take(bytes.byteLength);
    this.busy.set(file.path, file);
    const written = writeAt0(file, bytes).catch((e: unknown) => {
      this.busy.delete(file.path);
      void file.handle.then((h) => h.close()).catch(() => undefined);
      throw e;
    });
    return { path: file.path, written };
  }

  /** The stub is done with these files. */
  release(paths: readonly string[]): void {
    for (const p of paths) {
      const file = this.busy.get(p);
      if (!file) continue;
      this.busy.delete(p);
      if (this.free.length < MAX_FREE) {
        this.free.push(file);
      } else {
        void file.handle.then((h) => h.close()).catch(() => undefined);
        void fsp.unlink(file.path).catch(() => undefined);
      }
    }
  }

  /** Closes every file (the stub is gone; its files are unlinked by name). */
  closeAll(): void {
    for (const file of [...this.free, ...this.busy.values()]) void file.handle.then((h) => h.close()).catch(() => undefined);
    this.free.length = 0;
    this.busy.clear();
  }

  /** The smallest free file that fits, else the largest free one (it grows), else a new one. */
  private take(length: number): PoolFile {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const c = this.free[i].capacity;
      const b = best < 0 ? undefined : this.free[best].capacity;
      if (b === undefined || (c >= length ? b < length || c < b : b < length && c > b)) best = i;
    }
    if (best >= 0) return this.free.splice(best, 1)[0];
    const file = path.join(this.dir, `${this.prefix}n${++this.counter}`);
    const handle = fsp.open(file, 'w+', 0o600);
    handle.catch(() => undefined);
    return { path: file, handle, capacity: 0 };
  }
}

/** Writes at offset 0 in as many calls as it takes (fs.promises.writeFile would split into 512 KiB chunks). */
async function writeAt0(file: PoolFile, bytes: Uint8Array): Promise<void> {
  const handle = await file.handle;
  let done = 0;
  while (done < bytes.byteLength) done += (await handle.write(bytes, done, bytes.byteLength - done, done)).bytesWritten;
  file.capacity = Math.max(file.capacity, bytes.byteLength);
}
