/**
 * Issue 14's acceptance: 20 reloads of a model (new version folders, config changes, a corrupt
 * version that must be rolled past, removed versions) while 16 clients send requests, in poll mode
 * and in explicit mode. No request may fail, and once a reload has switched traffic no request sent
 * afterwards may get an answer from what it replaced.
 */
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { LifecycleEvent, NereidCore } from '@nereid/core';
import { sleep } from './helpers/poll';
import { postJson, startTestServer } from './helpers/server';
import { stampRequest, writeConfig, writeVersion } from './reload-models';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const CLIENTS = 16;
const RELOADS = 20;
const POLL_SECS = 0.1;
/**
 * Each client's pause between an answer and its next request. The clients share the server's
 * process and its event loop: back to back, 16 of them spent much of the test's CPU on requests
 * that add nothing (the switch is checked on the requests in flight across it and on the first
 * answers after it), and every load waited behind them on a busy machine. Paced, they still keep
 * requests in flight across every switch.
 */
const CLIENT_PAUSE_MS = 5;
/** Model files per version folder: model.onnx and alt_1..alt_3.onnx (config steps switch between them). */
const FILES = ['model.onnx', 'alt_1.onnx', 'alt_2.onnx', 'alt_3.onnx'];

/** What a version folder's file answers: version * 100 + file index. */
const stampOf = (version: number, file: number): number => version * 100 + file;

interface Answer {
  sentAt: number;
  stamp?: number;
  status: number;
  error?: string;
}

class Repository {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'nereid-reload-'));
  private readonly staging = mkdtempSync(path.join(tmpdir(), 'nereid-reload-staging-'));
  file = 0;

  config(): void {
    writeConfig(this.dir, { name: 'stamp', extra: `default_model_filename: "${FILES[this.file]}"` });
  }

  /** A whole version folder appears at once (renamed into place), as a deployment tool writes it. */
  addVersion(version: number, corrupt = false): void {
    const staged = path.join(this.staging, String(version));
    FILES.forEach((f, i) => writeVersion(this.staging, '', version, corrupt ? 'not an onnx model' : stampOf(version, i), f));
    renameSync(staged, path.join(this.dir, 'stamp', String(version)));
  }

  removeVersion(version: number): void {
    // Renamed out first: the folder disappears at once, not file by file.
    const gone = path.join(this.staging, `gone-${version}-${Date.now()}`);
    renameSync(path.join(this.dir, 'stamp', String(version)), gone);
    rmSync(gone, { recursive: true, force: true });
  }
}

/** One reload step: changes the repository, says what must answer afterwards (undefined: unchanged). */
interface Step {
  what: string;
  apply(repo: Repository): void;
  expect?: number;
  /** A version whose load must fail (the corrupt one). */
  fails?: number;
}

/** 20 steps in cycles of five: new version, config change, corrupt version, version past it, removed versions. */
function plan(): Step[] {
  const steps: Step[] = [];
  let latest = 1;
  let file = 0;
  for (let c = 0; steps.length < RELOADS; c++) {
    const base = latest;
    steps.push({ what: `new version ${base + 1}`, apply: (r) => r.addVersion(base + 1), expect: stampOf(base + 1, file) });
    const next = (file + 1) % FILES.length;
    steps.push({
      what: `config: ${FILES[next]}`,
      apply: (r) => {
        r.file = next;
        r.config();
      },
      expect: stampOf(base + 1, next),
    });
    file = next;
    steps.push({ what: `corrupt version ${base + 2}`, apply: (r) => r.addVersion(base + 2, true), fails: base + 2 });
    steps.push({ what: `new version ${base + 3} past the corrupt one`, apply: (r) => r.addVersion(base + 3), expect: stampOf(base + 3, file) });
    steps.push({
      what: `versions ${base + 2} and ${base + 3} removed`,
      apply: (r) => {
        r.removeVersion(base + 3);
        r.removeVersion(base + 2);
      },
      expect: stampOf(base + 1, file),
    });
    latest = base + 1;
  }
  return steps.slice(0, RELOADS);
}

/**
 * Waits that look at their condition again whenever a lifecycle event or an answer arrives: each
 * step goes on the moment what it waits for happens (polling every 20 ms cost up to a minute's
 * fiftieth of a second per wait, three waits a step, 40 steps).
 */
class Signals {
  private waiting: { check: () => boolean; done: () => void }[] = [];

  notify(): void {
    if (this.waiting.length === 0) return;
    this.waiting = this.waiting.filter((w) => {
      if (!w.check()) return true;
      w.done();
      return false;
    });
  }

  until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const entry = {
        check,
        done: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiting = this.waiting.filter((w) => w !== entry);
        reject(new Error(`timed out waiting for ${what}`));
      }, ms);
      this.waiting.push(entry);
    });
  }
}

interface Timed extends LifecycleEvent {
  at: number;
  /** How many answers had come when the event came: a request sent later is answered later. */
  answered: number;
}

interface Outcome {
  answers: Answer[];
  /** Per reload: from the change to the load starting (poll: the poll that noticed it). */
  noticeMs: number[];
  /** Per reload: from the change to the new version serving. */
  servingMs: number[];
}

async function reloadUnderLoad(mode: 'poll' | 'explicit'): Promise<Outcome> {
  const repo = new Repository();
  repo.config();
  repo.addVersion(1);
  const server: Server = await startTestServer({
    modelRepositories: [repo.dir],
    modelControlMode: mode,
    loadModels: mode === 'explicit' ? ['stamp'] : [],
    repositoryPollSecs: mode === 'poll' ? POLL_SECS : 0,
    allowMetrics: false,
  });
  const outcome: Outcome = { answers: [], noticeMs: [], servingMs: [] };
  const { answers } = outcome;
  const events: Timed[] = [];
  const signals = new Signals();
  (server.core as NereidCore).onLifecycle((e) => {
    events.push({ ...e, at: performance.now(), answered: answers.length });
    signals.notify();
  });
  let stop = false;
  // node:http on keep-alive connections: the clients share the server's process and its cores,
  // and cost it less this way than through fetch.
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS + 2 });
  const body = JSON.stringify(stampRequest(0));
  const ask = (): Promise<Answer> =>
    new Promise((resolve) => {
      const sentAt = performance.now();
      const req = http.request(
        { host: '127.0.0.1', port: server.httpPort, path: '/v2/models/stamp/infer', method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { outputs?: { data: number[] }[]; error?: string };
            resolve({ sentAt, status: res.statusCode ?? 0, stamp: parsed.outputs?.[0]?.data?.[0], error: parsed.error });
          });
        },
      );
      req.on('error', (e) => resolve({ sentAt, status: 0, error: e.message }));
      req.end(body);
    });
  const client = async (): Promise<void> => {
    while (!stop) {
      answers.push(await ask());
      signals.notify();
      await sleep(CLIENT_PAUSE_MS);
    }
  };
  try {
    const clients = Array.from({ length: CLIENTS }, client);
    let serving = stampOf(1, 0);
    for (const step of plan()) {
      events.length = 0;
      const changedAt = performance.now();
      step.apply(repo);
      const load = mode === 'explicit' ? postJson(`${server.http}/v2/repository/models/stamp/load`) : undefined;
      if (step.fails !== undefined) {
        const v = step.fails;
        await signals.until(`${step.what} to fail`, () => events.some((e) => e.version === v && e.state === 'UNAVAILABLE'));
        if (load) expect({ step: step.what, status: (await load).status }).toEqual({ step: step.what, status: 400 });
        expect((await ask()).stamp).toBe(serving);
        continue;
      }
      serving = step.expect!;
      await signals.until(`${step.what} to serve`, () => events.some((e) => e.state === 'READY'));
      const ready = events.find((e) => e.state === 'READY')!;
      // Only the answers that came after the switch can be to requests sent after it.
      const after = (): Answer[] => answers.slice(ready.answered).filter((a) => a.sentAt > ready.at);
      outcome.noticeMs.push(events.find((e) => e.state === 'LOADING')!.at - changedAt);
      outcome.servingMs.push(ready.at - changedAt);
      if (load) expect({ step: step.what, status: (await load).status }).toEqual({ step: step.what, status: 200 });
      // The switch is atomic: every request sent once the new version is READY gets its answer.
      await signals.until(`answers after ${step.what}`, () => after().length >= CLIENTS);
      const stale = after().filter((a) => a.stamp !== serving).map((a) => a.stamp);
      expect({ step: step.what, stale: stale.slice(0, 3) }).toEqual({ step: step.what, stale: [] });
    }
    stop = true;
    await Promise.all(clients);
  } finally {
    stop = true;
    agent.destroy();
    await server.close();
  }
  return outcome;
}

describe('reloads under load', () => {
  for (const mode of ['poll', 'explicit'] as const) {
    it(`${mode} mode: ${RELOADS} reloads while ${CLIENTS} clients send requests, none failing`, async () => {
      const { answers, noticeMs, servingMs } = await reloadUnderLoad(mode);
      const failed = answers.filter((a) => a.status !== 200 || typeof a.stamp !== 'number');
      expect(failed.slice(0, 5)).toEqual([]);
      expect(answers.length).toBeGreaterThan(RELOADS * CLIENTS);
      expect(servingMs).toHaveLength(RELOADS - RELOADS / 5);
      if (process.env.NEREID_RELOAD_TIMES) {
        // eslint-disable-next-line no-console
        console.log(`${mode}: ${answers.length} requests; ms from change to load: ${noticeMs.map(Math.round).join(' ')}; to serving: ${servingMs.map(Math.round).join(' ')}`);
      }
      // Poll mode: a change is noticed by the next poll (a poll under way, loading, delays the next one).
      if (mode === 'poll') expect(Math.max(...noticeMs)).toBeLessThan(POLL_SECS * 1000 + Math.max(...servingMs));
    });
  }
});
