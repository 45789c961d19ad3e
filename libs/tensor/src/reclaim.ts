import { types } from 'node:util';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

/**
 * Tensor storage handed over whole: a buffer its producer made for one response and holds no
 * more (onnxruntime-node returns every output in a fresh ArrayBuffer), which the reader that is
 * done with the response may free at once instead of leaving it to V8's garbage collector.
 *
 * Why: a 16 MiB output per request left to the collector made V8 run a scavenge on every request
 * ("external memory pressure") and a mark-compact every three or four (about a third of the
 * server's CPU in bench/shared-memory's profile), and glibc handed out fresh, unfaulted memory
 * for the next output. Freed at once, the next output reuses the same warm memory and the
 * collector has nothing to do (bench/RESULTS.md, bench/shared-memory).
 *
 * The rule: a producer marks (`markReclaimable`) only storage that nobody else can hold; anything
 * that keeps a tensor beyond its response (a sequence's implicit state) calls `retainStorage`;
 * the one reader that knows when the response is no longer read (the HTTP front door, once the
 * answer is handed to the kernel) calls `reclaimStorage`. Storage not marked is never touched.
 */
const reclaimable = new WeakSet<ArrayBuffer>();

/** Smaller buffers cost the collector little; marking them would only add work per request. */
export const RECLAIM_MIN_BYTES = 64 * 1024;

/**
 * Marks `data` (a tensor's data, in any of its forms) reclaimable when it is a typed array over
 * the whole of a plain ArrayBuffer of at least RECLAIM_MIN_BYTES; anything else is left alone.
 */
export function markReclaimable(data: unknown): void {
  const buffer = wholeBuffer(data);
  if (buffer !== undefined && buffer.byteLength >= RECLAIM_MIN_BYTES && detacher() !== undefined) reclaimable.add(buffer);
}

/** `data` is kept by someone beyond the response: never reclaimed. */
export function retainStorage(data: unknown): void {
  const buffer = wholeBuffer(data);
  if (buffer !== undefined) reclaimable.delete(buffer);
}

/**
 * Frees `data`'s storage when it was marked reclaimable (its views read as empty afterwards);
 * true when it was freed. Call only once nothing reads the response any more.
 */
export function reclaimStorage(data: unknown): boolean {
  const buffer = wholeBuffer(data);
  if (buffer === undefined || !reclaimable.has(buffer)) return false;
  reclaimable.delete(buffer);
  try {
    detacher()!(buffer);
    return true;
  } catch {
    // A buffer V8 does not let go of (not detachable): the collector frees it as before.
    return false;
  }
}

/** Whether `data` is marked reclaimable. */
export function isReclaimable(data: unknown): boolean {
  const buffer = wholeBuffer(data);
  return buffer !== undefined && reclaimable.has(buffer);
}

function wholeBuffer(data: unknown): ArrayBuffer | undefined {
  if (!ArrayBuffer.isView(data)) return undefined;
  const buffer = data.buffer;
  // A plain ArrayBuffer of any realm (not a SharedArrayBuffer, which other threads may hold).
  if (!types.isArrayBuffer(buffer) || buffer.byteLength === 0) return undefined;
  return data.byteOffset === 0 && data.byteLength === buffer.byteLength ? buffer : undefined;
}

type Detach = (buffer: ArrayBuffer) => void;
let detach: Detach | null | undefined;

/**
 * Detaching an ArrayBuffer frees its memory at once: `ArrayBuffer.prototype.transfer(0)`
 * (ES2024). Node 20's V8 has it behind `--harmony-rab-gsab-transfer`; a context created after
 * the flag is set gets the builtin, which works on this context's buffers too. undefined when
 * neither way exists (then nothing is ever marked).
 */
function detacher(): Detach | undefined {
  if (detach === undefined) {
    detach = null;
    type Transfer = (this: ArrayBuffer, length?: number) => ArrayBuffer;
    let transfer = (ArrayBuffer.prototype as { transfer?: Transfer }).transfer;
    if (typeof transfer !== 'function') {
      try {
        v8.setFlagsFromString('--harmony-rab-gsab-transfer');
        const found: unknown = vm.runInNewContext('ArrayBuffer.prototype.transfer');
        if (typeof found === 'function') transfer = found as Transfer;
      } catch {
        transfer = undefined;
      }
    }
    if (typeof transfer === 'function') {
      const fn = transfer;
      detach = (buffer) => void fn.call(buffer, 0);
    }
  }
  return detach ?? undefined;
}
