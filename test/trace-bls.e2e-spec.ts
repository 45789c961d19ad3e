/**
 * End-to-end: BLS calls in Triton's trace JSON. A python model calls add_sub three times per
 * request: with `exec()` and `async_exec()` given the request's `trace=request.trace()` (each gets
 * a trace of its own whose `parent_id` is the calling request's trace id, with Triton's timestamps
 * inside the parent's compute), and with `exec()` given no trace (not traced, as Triton documents:
 * "Triton does not collect traces for child models invoked from BLS models by default").
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Msg } from './helpers/grpc-client';
import { waitFor } from './helpers/poll';
import { makeRepository, MODELS, postJson, ROOT, startTestServer } from './helpers/server';
import { recordsOf, traceEveryRequest, type TraceRecord } from './helpers/trace-files';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const FIX = path.join(ROOT, 'test/fixtures/python');

/** The head record of the trace of `requestId` and its timestamps by name. */
function traceOf(records: TraceRecord[], requestId: string): { head: TraceRecord; at: Map<string, number> } | undefined {
  const head = records.find((r) => r.request_id === requestId && r.model_name !== undefined);
  const ts = head && records.find((r) => r.id === head.id && r.timestamps)?.timestamps;
  if (!head || !ts) return undefined;
  return { head, at: new Map(ts.map((t) => [t.name, t.ns])) };
}

describe('trace extension: BLS calls traced as children of the calling request', () => {
  let server: Server;
  let dir = '';
  const records = () => recordsOf(dir, 'trace.json');

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'nereid-trace-bls-'));
    const repo = makeRepository({ bls_traced: path.join(FIX, 'bls_traced'), add_sub: path.join(MODELS, 'add_sub') });
    server = await startTestServer({
      modelRepositories: [repo],
      trace: traceEveryRequest(dir),
    });
  }, 60_000);
  afterAll(() => server?.close());

  const infer = async (id: string): Promise<Msg> => {
    const r = await postJson(`${server.http}/v2/models/bls_traced/infer`, {
      id,
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [5, 6, 7, 8] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      ],
    });
    expect(r.status).toBe(200);
    return r.body;
  };

  it("exec() and async_exec() given request.trace(): a trace each, parent_id the caller's trace id", async () => {
    const body = await infer('caller-1');
    expect(body.outputs.map((o: Msg) => o.data)).toEqual([[6, 8, 10, 12], [4, 4, 4, 4]]);
    const parent = await waitFor('the caller trace', () => traceOf(records(), 'caller-1'));
    expect(parent.head).toMatchObject({ model_name: 'bls_traced', request_id: 'caller-1' });
    expect(parent.head.parent_id).toBeUndefined();
    for (const child of ['sync-caller-1', 'async-caller-1']) {
      const t = await waitFor(`the trace of ${child}`, () => traceOf(records(), child));
      expect(t.head).toMatchObject({ model_name: 'add_sub', model_version: 1, request_id: child, parent_id: parent.head.id });
      expect(t.head.id).not.toBe(parent.head.id);
      // Triton's timestamps of the child, in order, inside the parent's compute.
      const order = ['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END'];
      const ns = order.map((n) => t.at.get(n));
      for (const v of ns) expect(v).toBeDefined();
      for (let i = 1; i < ns.length; i++) expect(ns[i]!).toBeGreaterThanOrEqual(ns[i - 1]!);
      expect(ns[0]!).toBeGreaterThanOrEqual(parent.at.get('COMPUTE_START')!);
      expect(ns[ns.length - 1]!).toBeLessThanOrEqual(parent.at.get('COMPUTE_END')!);
      // A BLS call has no front door: no HTTP timestamps.
      expect([...t.at.keys()].some((n) => n.startsWith('HTTP_'))).toBe(false);
    }
  });

  it('a BLS call given no trace is not traced, though rate 1 traces every other request', async () => {
    await infer('caller-2');
    await infer('caller-3');
    // A caller's trace is written when it ends, after its children's: wait for all of them.
    const ids = ['caller-2', 'caller-3', 'sync-caller-3', 'async-caller-3'];
    await waitFor('the callers and the caller-3 children', () => {
      const now = records();
      return ids.every((id) => traceOf(now, id) !== undefined) || undefined;
    });
    const all = records();
    expect(all.filter((r) => r.request_id?.startsWith('untraced-'))).toEqual([]);
    // Every caller is traced at rate 1, each BLS call given the trace too: only the untraced calls are missing.
    for (const id of ['caller-2', 'caller-3']) expect(traceOf(all, id)).toBeDefined();
    const heads = all.filter((r) => r.model_name !== undefined);
    expect(heads.filter((r) => r.model_name === 'add_sub').every((r) => r.parent_id !== undefined)).toBe(true);
  });
});
