/** Loopback ports for the processes a test starts. */
import * as net from 'node:net';

/**
 * Ports are handed out from 20000–32767: below Linux's ephemeral range (32768–60999 by default),
 * so no outgoing connection of any process (a client socket, a Redis connection) takes one between
 * the hand-out and the bind; and each jest worker gets a slice of its own, so two workers never
 * hand out the same port. Before, a port came from binding port 0 and closing it: the kernel could
 * offer it again to the next ask, in this or another worker, before the process it was meant for
 * bound it (a fresh-clone CI run gave one worker the same port for HTTP and metrics: EADDRINUSE).
 */
export const PORT_RANGE = { first: 20000, last: 32767 } as const;
const SLICES = 8;

/** The ports of the jest worker `workerId` (JEST_WORKER_ID, from 1): one slice of PORT_RANGE. */
export function portSlice(workerId: number): { first: number; last: number } {
  const size = Math.floor((PORT_RANGE.last - PORT_RANGE.first + 1) / SLICES);
  const first = PORT_RANGE.first + ((Math.max(1, workerId) - 1) % SLICES) * size;
  return { first, last: first + size - 1 };
}

const slice = portSlice(Number(process.env.JEST_WORKER_ID ?? '1'));
/** Where the next search starts: a random point, so that a rerun of one worker does not retry the ports its last run used. */
let next = slice.first + Math.floor(Math.random() * (slice.last - slice.first + 1));
/** Ports this test process has handed out: never again. */
const handedOut = new Set<number>();

/** Whether nothing listens on `port` of 127.0.0.1 now (bound and closed at once). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host: '127.0.0.1', exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/** A TCP port of this worker's slice, free on 127.0.0.1 when asked, never one this process handed out before. */
export async function freePort(): Promise<number> {
  const size = slice.last - slice.first + 1;
  for (let tried = 0; tried < size; tried++) {
    const port = next;
    next = next === slice.last ? slice.first : next + 1;
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free loopback port left in ${slice.first}–${slice.last}`);
}
