import { constants } from 'node:buffer';
import { loadNativeAddon } from './native';

/** native/shm-map (see its src/shm_map.c). */
interface ShmMapAddon {
  /** A read-write shared mapping of [offset, offset + length) of `fd`; undefined when none can be made. */
  map(fd: number, offset: number, length: number): { buffer: ArrayBuffer; slot: number } | undefined;
  /** Whether an access faulted past the end of the object (the rest of the mapping is zero pages since). */
  truncated(slot: number): boolean;
  /** Detaches `buffer` (its views become empty) and unmaps it. */
  unmap(slot: number, buffer: ArrayBuffer): void;
}

/**
 * A registered region mapped into the server (native/shm-map), so that requests read inputs where
 * the client wrote them and write outputs into the region with one copy. Without the addon (not
 * built, NEREID_NATIVE=0) regions are read and written with pread/pwrite instead.
 *
 * A client may truncate its object at any time; the addon's SIGBUS handler then puts zero pages
 * over the rest of the mapping and `truncated` turns true for good: every request that used it is
 * answered with an error, and the region gets a fresh mapping for the requests after.
 *
 * Counted uses: the region holds one while the mapping is its current one, each request's slice
 * one. The range is unmapped (and its ArrayBuffer detached) when the last is dropped, so no run of
 * a model can read an unmapped input, and no JS view of it outlives the mapping.
 */
export class RegionMapping {
  private users = 1;

  private constructor(
    private readonly addon: ShmMapAddon,
    private readonly buffer: ArrayBuffer,
    private readonly slot: number,
    /** The mapping's first byte's position in its object (the region's offset). */
    private readonly position: number,
  ) {}

  /** The mapping of `byteSize` bytes at `offset` of `fd`, or undefined (no addon, an empty or huge region, no slot or address space left). */
  static open(fd: number, offset: number, byteSize: number): RegionMapping | undefined {
    // Loaded once by loadNativeAddon (undefined when not built or switched off).
    const addon = loadNativeAddon<ShmMapAddon>('shm-map');
    // A region larger than one ArrayBuffer may be (a sparse object can claim terabytes) stays unmapped.
    if (!addon || byteSize === 0 || byteSize > constants.MAX_LENGTH) return undefined;
    const m = addon.map(fd, offset, byteSize);
    return m && new RegionMapping(addon, m.buffer, m.slot, offset);
  }

  /** True once an access faulted past the object's end: what it read was zeros, what it wrote is lost. */
  get truncated(): boolean {
    return this.addon.truncated(this.slot);
  }

  /**
   * `length` bytes at `offset` of the region, in place, or undefined when they do not start on an
   * 8-byte boundary of the object (a tensor over them would not be aligned for its element type).
   */
  alignedView(offset: number, length: number): Uint8Array | undefined {
    return (this.position + offset) % 8 === 0 ? new Uint8Array(this.buffer, offset, length) : undefined;
  }

  view(offset: number, length: number): Uint8Array {
    return new Uint8Array(this.buffer, offset, length);
  }

  hold(): void {
    this.users++;
  }

  drop(): void {
    if (--this.users === 0) this.addon.unmap(this.slot, this.buffer);
  }
}
