import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fsp } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Writable } from 'node:stream';
import { encodeFrame, FrameReader, MSG, type BlobBuilder, type Frame } from './frames';
import { ShmPool } from './shm-pool';
import type { ShmSettings } from './wire-tensors';

/** Folder holding stub.py and Nereid's triton_python_backend_utils.py (same layout in src and dist). */
export const PYTHON_DIR = path.resolve(__dirname, '../../python');
const STUB_SCRIPT = path.join(PYTHON_DIR, 'stub.py');
const STDERR_TAIL_LINES = 30;

export type LogFn = (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;

export interface StubLaunch {
  /** Interpreter to run. */
  python: string;
  /** Extra environment (EXECUTION_ENV_PATH). */
  env?: NodeJS.ProcessEnv;
  /** Tensors of at least this many bytes go through /dev/shm files. */
  shmThreshold: number;
}

/** How a stub process ended. */
export interface StubExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function describeExit(exit: StubExit): string {
  return exit.signal ? `killed by signal ${exit.signal}` : `exited with code ${exit.code}`;
}

function defaultShmDir(): string {
  return existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
}

/** One running stub: frames in and out over an inherited socket (fd 3), stdout/stderr to the log. */
export class StubProcess {
  readonly shm: ShmSettings;
  readonly exited: Promise<StubExit>;
  private readonly child: ChildProcess;
  private readonly channel: Writable;
  private readonly stderrTail: string[] = [];
  private alive = true;

  private onFrame: (frame: Frame) => void;
  private logTo: LogFn;

  constructor(
    readonly launch: StubLaunch,
    log: LogFn,
    onFrame: (frame: Frame) => void,
  ) {
    this.onFrame = onFrame;
    this.logTo = log;
    const dir = defaultShmDir();
    const prefix = `nereid-py-${process.pid}-${randomBytes(6).toString('hex')}-`;
    this.shm = { dir, prefix, threshold: launch.shmThreshold, pool: new ShmPool(dir, prefix), released: [] };
    const args = ['-u', STUB_SCRIPT, '3', this.shm.dir, this.shm.prefix, String(this.shm.threshold)];
    this.child = spawn(launch.python, args, {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      // A process group of its own: a signal to the server's group (Ctrl-C, systemd) does not reach
      // the stub, which the server finalizes after its in-flight requests (stub.py also ignores
      // SIGINT/SIGTERM, for a cgroup-wide kill). It exits by itself when the server's socket closes.
      detached: true,
      env: { ...process.env, ...launch.env },
    });
    const channel = this.child.stdio[3] as unknown as Writable & NodeJS.ReadableStream;
    this.channel = channel;
    const reader = new FrameReader(
      (frame) => {
        if (frame.type === MSG.RELEASE) this.shm.pool.release(frame.header as string[]);
        else this.onFrame(frame);
      },
      // A stub that writes something other than frames is broken: killed, its requests fail as at any exit.
      (error) => {
        this.logTo('error', `python stub sent a malformed frame (${error.message}); stopping it`);
        this.kill();
      },
    );
    channel.on('data', (chunk: Buffer) => reader.push(chunk));
    channel.on('error', () => undefined);
    this.forwardLines(this.child.stdout, (line) => this.logTo('info', line));
    this.forwardLines(this.child.stderr, (line) => {
      this.stderrTail.push(line);
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
      this.logTo('warn', line);
    });
    this.exited = new Promise((resolve) => {
      this.child.once('error', (e) => {
        this.logTo('error', `cannot start '${launch.python}': ${e.message}`);
        this.alive = false;
        resolve({ code: null, signal: null });
      });
      this.child.once('exit', (code, signal) => {
        this.alive = false;
        this.shm.pool.closeAll();
        void this.removeShmFiles().then(() => resolve({ code, signal }));
      });
    });
  }

  /** Hands the stub's next frames to another owner (a model instance taking over an idle stub). */
  adopt(onFrame: (frame: Frame) => void, log?: LogFn): void {
    this.onFrame = onFrame;
    if (log) this.logTo = log;
    this.setRef(true);
  }

  /**
   * Whether the stub keeps the server's event loop alive. An idle stub waiting to be taken over is
   * not a reason for the process to stay (a test run or a failed start would otherwise linger).
   */
  setRef(ref: boolean): void {
    const handles = [this.child, this.channel, this.child.stdout, this.child.stderr] as unknown as ({ ref?: () => void; unref?: () => void } | null)[];
    for (const h of handles) {
      if (ref) h?.ref?.();
      else h?.unref?.();
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get isAlive(): boolean {
    return this.alive;
  }

  /** The last lines the stub wrote to stderr (for error messages). */
  stderrText(): string {
    return this.stderrTail.join('\n');
  }

  /** Writes a frame; the stub's files read since the last frame go back first, in a RELEASE frame. */
  send(type: number, header: unknown, blob?: BlobBuilder): void {
    if (!this.alive) return;
    const released = this.shm.released;
    const before = released.length > 0 ? encodeFrame(MSG.RELEASE, released.splice(0))[0] : undefined;
    const chunks = encodeFrame(type, header, blob, before);
    if (chunks.length === 1) {
      this.channel.write(chunks[0]);
      return;
    }
    this.channel.cork();
    for (const c of chunks) this.channel.write(c);
    this.channel.uncork();
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.alive) this.child.kill(signal);
  }

  private forwardLines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
    if (!stream) return;
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (text: string) => {
      const lines = (rest + text).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    });
    stream.on('end', () => {
      if (rest) onLine(rest);
    });
  }

  /** Files the stub wrote for us but we never read (it died mid-batch). */
  private async removeShmFiles(): Promise<void> {
    const names = await fsp.readdir(this.shm.dir).catch(() => [] as string[]);
    await Promise.all(
      names.filter((n) => n.startsWith(this.shm.prefix)).map((n) => fsp.unlink(path.join(this.shm.dir, n)).catch(() => undefined)),
    );
  }
}
