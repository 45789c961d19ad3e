import * as fs from 'node:fs';
import * as path from 'node:path';
import { SharedMemoryErrors as Errors } from '@nereid/protocol';
import { BufferPool } from './buffer-pool';
import { RegionMapping } from './shm-mapping';

/** A registered system region as the status endpoints list it (Triton's JSON and proto field names). */
export interface SystemRegionStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

/**
 * Key prefixes no client may register: Triton's python backend regions, and the files Nereid's own
 * python backend hands tensors through (libs/backends/src/python/stub-process.ts names them
 * `nereid-py-<pid>-...`). Registering one would let a client read or overwrite a model's tensors.
 */
export const RESERVED_KEY_PREFIXES: readonly string[] = ['triton_python_backend_shm_region_', 'nereid-py-'];

/** At most this many regions at once: each holds a file descriptor. */
export const MAX_REGIONS = 128;

/** A byte count or offset as the wire gives it: a number, or a bigint / decimal string beyond 2^53. */
export type WireSize = number | bigint | string;

/**
 * The file a key names, or undefined when the key is not '/' plus one plain file name. POSIX
 * shm_open("/name") opens /dev/shm/name on Linux; nothing else under /dev/shm (or outside it) may
 * be reached: no '/' after the first, no '..', no NUL, at most NAME_MAX bytes.
 */
export function shmKeyFile(dir: string, key: string): string | undefined {
  if (!key.startsWith('/')) return undefined;
  const name = key.slice(1);
  if (name.length === 0 || Buffer.byteLength(name) > 255) return undefined;
  if (name.includes('/') || name.includes('\0') || name.includes('..') || name === '.') return undefined;
  return path.join(dir, name);
}

/** A non-negative safe integer, or undefined (negative, fractional, beyond 2^53). */
function toSize(v: WireSize): number | undefined {
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * One registered region: an open file descriptor on the object, kept from registration on (a later
 * file under the same name is never what is read or written), and a count of its users. Unregister
 * drops the registry's use; the descriptor closes (and the mapping goes) when the last request
 * using the region is done, so a descriptor number is never written through after it could have
 * been reused.
 */
class SystemRegion {
  private users = 1;
  /** The region mapped (see RegionMapping), made on first use; undefined while not (yet) mapped. */
  private mapping: RegionMapping | undefined;

  constructor(
    readonly name: string,
    readonly key: string,
    readonly offset: number,
    readonly byteSize: number,
    readonly fd: number,
    /** Whether to map the region (false: positional reads and writes only). */
    private readonly map: boolean,
  ) {}

  hold(): void {
    this.users++;
  }

  drop(): void {
    if (--this.users > 0) return;
    this.retire(this.mapping);
    fs.closeSync(this.fd);
  }

  /**
   * The region's mapping, held for one more user (the caller drops it), or undefined. A mapping
   * that saw its object truncated is replaced by a fresh one.
   */
  holdMapping(): RegionMapping | undefined {
    if (!this.map) return undefined;
    if (this.mapping?.truncated) this.retire(this.mapping);
    this.mapping ??= RegionMapping.open(this.fd, this.offset, this.byteSize);
    this.mapping?.hold();
    return this.mapping;
  }

  /** `mapping` is no longer handed out (it goes once its last request drops it). */
  retire(mapping: RegionMapping | undefined): void {
    if (!mapping || mapping !== this.mapping) return;
    this.mapping = undefined;
    mapping.drop();
  }

  status(): SystemRegionStatus {
    return { name: this.name, key: this.key, offset: this.offset, byte_size: this.byteSize };
  }
}

/**
 * `byteSize` bytes at `offset` of a registered region, held for one request: reads an input from it
 * or writes an output into it, then `release()` (exactly once). Every use checks the object's size
 * again: a client that truncates its object after registering gets an error, not a short read or a
 * file grown by the server.
 */
export class SharedMemorySlice {
  private released = false;
  private readonly mapping: RegionMapping | undefined;

  constructor(
    private readonly region: SystemRegion,
    /** Offset within the region (added to the region's own offset in the object). */
    private readonly offset: number,
    readonly byteSize: number,
  ) {
    this.mapping = region.holdMapping();
  }

  get regionName(): string {
    return this.region.name;
  }

  /**
   * The slice's bytes in place, when the region is mapped and they are 8-byte aligned: a tensor
   * over them reads the client's memory with no copy. The caller holds the slice until nothing
   * reads them, then calls `verify()` before trusting what was read.
   */
  mappedView(): Uint8Array | undefined {
    if (!this.mapping || this.byteSize === 0) return undefined;
    this.checkSize();
    return this.mapping.alignedView(this.offset, this.byteSize);
  }

  /**
   * Throws when the object was truncated while the slice was used (a read of it may have seen
   * zeros, a write into it is lost): the request is answered with this error instead.
   */
  verify(bytes = this.byteSize): void {
    if (this.mapping?.truncated) {
      this.region.retire(this.mapping);
      throw Errors.truncated(this.region.name);
    }
    this.checkSize(bytes);
  }

  /**
   * Bytes the slice covers, read straight into `target` (default: a buffer of their own; 8-byte
   * aligned either way, so the tensor is a view of it with no copy after).
   */
  read(target: Uint8Array = Buffer.allocUnsafeSlow(this.byteSize)): Uint8Array {
    this.checkSize();
    if (this.mapping) {
      target.set(this.mapping.view(this.offset, this.byteSize));
      this.verify();
    } else {
      this.transfer(target, (buf, at, len, pos) => fs.readSync(this.region.fd, buf, at, len, pos));
    }
    return target;
  }

  /** Writes `bytes` (an output's data, as it is) at the slice's start; they must fit. */
  write(bytes: Uint8Array, output: string): void {
    if (bytes.byteLength > this.byteSize) throw Errors.outputTooSmall(output, this.byteSize, bytes.byteLength);
    this.checkSize(bytes.byteLength);
    if (this.mapping) {
      // One copy into the client's pages; a truncation during it is caught by verify().
      this.mapping.view(this.offset, bytes.byteLength).set(bytes);
      this.verify(bytes.byteLength);
    } else {
      this.transfer(bytes, (buf, at, len, pos) => fs.writeSync(this.region.fd, buf, at, len, pos));
    }
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.mapping?.drop();
    this.region.drop();
  }

  private get start(): number {
    return this.region.offset + this.offset;
  }

  private checkSize(bytes = this.byteSize): void {
    if (fs.fstatSync(this.region.fd).size < this.start + bytes) throw Errors.truncated(this.region.name);
  }

  /** Positional I/O until every byte moved (tmpfs moves them in one call; a short count is retried). */
  private transfer(buf: Uint8Array, io: (buf: Uint8Array, at: number, len: number, pos: number) => number): void {
    let done = 0;
    while (done < buf.byteLength) {
      const n = io(buf, done, buf.byteLength - done, this.start + done);
      if (n <= 0) throw Errors.truncated(this.region.name);
      done += n;
    }
  }
}

/**
 * What one request uses of client shared memory: its inputs (in place in mapped regions, else read
 * into pooled buffers), and the slices its outputs are written into. `verifyInputs()` (before the
 * response is encoded) checks that no input's object was truncated while the model read it;
 * `release()` (once the response is sent) lets go of the slices and gives the input buffers back;
 * until then nothing else reads or writes them.
 */
export class SharedMemoryUse {
  private outputs: Map<string, SharedMemorySlice> | undefined;
  private inputs: Uint8Array[] | undefined;
  /** Slices whose mapped bytes are input tensors (held until release). */
  private mappedInputs: SharedMemorySlice[] | undefined;
  private inputBytes = 0;

  constructor(
    private readonly shm: SystemSharedMemory,
    private readonly pool: BufferPool,
  ) {}

  /** An input's bytes from region `name` (Triton's checks first), in a buffer held until release. */
  readInput(name: string, offset: WireSize, byteSize: WireSize, input: string): Uint8Array {
    const slice = this.shm.slice(name, offset, byteSize);
    let held = false;
    try {
      // Bounded before anything is allocated: a sparse object can be registered far larger than memory.
      this.inputBytes += slice.byteSize;
      if (this.inputBytes > this.shm.maxInputBytes) throw Errors.inputTooLarge(input, slice.byteSize, this.shm.maxInputBytes);
      const view = slice.mappedView();
      if (view) {
        (this.mappedInputs ??= []).push(slice);
        held = true;
        return view;
      }
      const target = this.pool.acquire(slice.byteSize);
      (this.inputs ??= []).push(target);
      return slice.read(target);
    } finally {
      if (!held) slice.release();
    }
  }

  /**
   * Throws (Errors.truncated) when an input read in place came from an object truncated meanwhile:
   * the model may have read zeros. Called once the model ran, before the response is encoded.
   */
  verifyInputs(): void {
    if (this.mappedInputs) for (const s of this.mappedInputs) s.verify();
  }

  /** Output `output` goes into region `name` at `offset`, at most `byteSize` bytes. */
  bindOutput(output: string, name: string, offset: WireSize, byteSize: WireSize): void {
    const slice = this.shm.slice(name, offset, byteSize);
    this.outputs ??= new Map();
    this.outputs.get(output)?.release();
    this.outputs.set(output, slice);
  }

  /** The slice output `name` is written into, if it goes to shared memory. */
  output(name: string): SharedMemorySlice | undefined {
    return this.outputs?.get(name);
  }

  /** Releases the output slices and gives the input buffers back (idempotent). */
  release(): void {
    if (this.outputs) for (const s of this.outputs.values()) s.release();
    this.outputs = undefined;
    if (this.mappedInputs) for (const s of this.mappedInputs) s.release();
    this.mappedInputs = undefined;
    if (this.inputs) for (const b of this.inputs) this.pool.release(b);
    this.inputs = undefined;
  }
}

export interface SharedMemoryOptions {
  /** `--allow-client-shm`: register/unregister refused while false. */
  enabled: boolean;
  /** Where POSIX shared memory objects live (tests may point elsewhere). Default /dev/shm. */
  dir?: string;
  /**
   * The most bytes of input one request may read from regions (the CLI passes
   * `--http-max-input-size`: a request holds no more through shared memory than in its body).
   * Default DEFAULT_MAX_INPUT_BYTES.
   */
  maxInputBytes?: number;
  /**
   * Map regions into the server when native/shm-map is built (default true): inputs are read in
   * place and outputs written with one copy. False: positional reads and writes only.
   */
  mapRegions?: boolean;
}

/** 64 MiB, Triton's default `--http-max-input-size`. */
export const DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024;

/**
 * Client system shared memory (Triton's SharedMemoryManager, CPU regions): named regions of POSIX
 * shared memory objects under /dev/shm that requests read inputs from and write outputs into.
 * A region is an open file descriptor, mapped into the server by native/shm-map when it is built
 * (inputs used in place, outputs copied in once; see RegionMapping); without it, positional reads
 * and writes copy between the object's pages and the tensor's buffer. Region names share one
 * namespace with CUDA regions, which this server never holds.
 */
export class SystemSharedMemory {
  readonly enabled: boolean;
  readonly maxInputBytes: number;
  private readonly dir: string;
  private readonly regions = new Map<string, SystemRegion>();
  private readonly inputBuffers = new BufferPool();
  private readonly mapRegions: boolean;

  constructor(options: SharedMemoryOptions) {
    this.enabled = options.enabled;
    this.mapRegions = options.mapRegions ?? true;
    this.maxInputBytes = options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
    this.dir = options.dir ?? '/dev/shm';
  }

  /** Opens the object `key` names and keeps it as region `name` (`offset`, `byteSize` within it). */
  register(name: string, key: string, offset: WireSize, byteSize: WireSize): void {
    if (!this.enabled) throw Errors.disabled();
    if (name === '') throw Errors.nameRequired('system');
    const file = shmKeyFile(this.dir, key);
    if (file === undefined) throw Errors.invalidKey(name);
    const base = path.basename(file);
    for (const prefix of RESERVED_KEY_PREFIXES) if (base.startsWith(prefix)) throw Errors.reservedKey(name, prefix);
    if (this.regions.has(name)) throw Errors.alreadyExists(name);
    if (this.regions.size >= MAX_REGIONS) throw Errors.tooManyRegions(name, MAX_REGIONS);
    const start = toSize(offset);
    const size = toSize(byteSize);
    if (start === undefined || size === undefined) throw Errors.registerOutOfBounds(name);
    let fd: number;
    try {
      // O_NOFOLLOW: /dev/shm is writable by everyone, and a link planted there must not lead the
      // server to another file. No O_CREAT: the client creates its object.
      fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch {
      throw Errors.cannotOpen(name);
    }
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile()) throw Errors.invalidRegion(name);
      if (start + size > stat.size) throw Errors.registerOutOfBounds(name);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
    this.regions.set(name, new SystemRegion(name, key, start, size, fd, this.mapRegions));
  }

  /** Unregisters `name`, or every region when `name` is undefined or ''. Unknown names are no error. */
  unregister(name?: string): void {
    if (!this.enabled) throw Errors.disabled();
    this.drop(name);
  }

  /** Every region (name undefined or ''), or the one named; unknown → NOT_FOUND. */
  status(name?: string): SystemRegionStatus[] {
    if (name === undefined || name === '') return [...this.regions.values()].map((r) => r.status());
    const region = this.regions.get(name);
    if (!region) throw Errors.statusNotFound('system', name);
    return [region.status()];
  }

  /** Whether a system region holds `name` (CUDA status tells such a name apart from an unknown one). */
  has(name: string): boolean {
    return this.regions.has(name);
  }

  /**
   * Holds `byteSize` bytes at `offset` of region `name` for one request, with Triton's checks
   * (SharedMemoryManager::GetMemoryInfo): a known region, an offset inside it, offset + size inside it.
   */
  slice(name: string, offset: WireSize, byteSize: WireSize): SharedMemorySlice {
    const region = this.regions.get(name);
    if (!region) throw Errors.notFound(name);
    const start = toSize(offset);
    if (start === undefined || start >= region.byteSize) throw Errors.invalidOffset(name);
    const size = toSize(byteSize);
    if (size === undefined || start + size > region.byteSize) throw Errors.outOfBounds(name);
    region.hold();
    return new SharedMemorySlice(region, start, size);
  }

  /** A request's use of the regions (see SharedMemoryUse). */
  use(): SharedMemoryUse {
    return new SharedMemoryUse(this, this.inputBuffers);
  }

  /** Unregisters every region (shutdown); regions in use close when their requests finish. */
  close(): void {
    this.drop(undefined);
  }

  private drop(name: string | undefined): void {
    const names = name === undefined || name === '' ? [...this.regions.keys()] : [name];
    for (const n of names) {
      const region = this.regions.get(n);
      if (!region) continue;
      this.regions.delete(n);
      region.drop();
    }
  }
}
