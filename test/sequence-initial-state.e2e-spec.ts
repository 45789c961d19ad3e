/**
 * End-to-end: an implicit state whose `initial_state` comes from a `data_file` in the model's
 * `initial_state/` folder (read by the sequence batcher when the model loads), through a real
 * server and a real python stub; a data file that is missing or too short leaves the model
 * UNAVAILABLE with Triton's words, the other models READY.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { httpStep, type Step } from './helpers/sequence-client';
import { makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const FIXTURE = path.join(ROOT, 'test/fixtures/python/sequence_initial_state');
let server: Server;

beforeAll(async () => {
  const repo = makeRepository({ sequence_initial_state: FIXTURE, missing_file: FIXTURE, short_file: FIXTURE });
  for (const [model, edit] of [
    ['missing_file', (c: string) => c.replace('"start.bin"', '"absent.bin"')],
    // Every tensor (the state included) becomes [2]: the 4-byte file holds one INT32 of the two.
    ['short_file', (c: string) => c.replace(/dims: \[ 1 \]/g, 'dims: [ 2 ]')],
  ] as const) {
    const file = path.join(repo, model, 'config.pbtxt');
    writeFileSync(file, edit(readFileSync(file, 'utf8')).replace('name: "sequence_initial_state"', `name: "${model}"`));
  }
  server = await startTestServer({ modelRepositories: [repo] });
}, 60_000);

afterAll(async () => {
  await server?.close();
});

const step = (id: bigint, value: number, flags: { start?: boolean; end?: boolean } = {}): Step => ({
  model: 'sequence_initial_state',
  id,
  value,
  start: flags.start === true,
  end: flags.end === true,
});

async function value(s: Step): Promise<number> {
  const o = await httpStep(server.http, s);
  if (!o.ok) throw new Error(`${o.status} ${o.message}`);
  expect(o.answer.outputs).toEqual(['OUTPUT']);
  return o.answer.value;
}

describe('initial state from a data file', () => {
  it('starts every sequence (and every START again) from the file, then carries the state', async () => {
    expect(await value(step(1n, 5, { start: true }))).toBe(105);
    expect(await value(step(2n, 1, { start: true }))).toBe(101);
    expect(await value(step(1n, 7))).toBe(112);
    expect(await value(step(2n, 2))).toBe(103);
    expect(await value(step(1n, 3, { start: true }))).toBe(103);
    expect(await value(step(1n, 4, { end: true }))).toBe(107);
    expect(await value(step(2n, 10, { end: true }))).toBe(113);
  });

  it('leaves a model whose data file is missing or too short UNAVAILABLE, saying why', async () => {
    const index = await postJson(`${server.http}/v2/repository/index`, {});
    const byName = Object.fromEntries((index.body as { name: string; state: string; reason: string }[]).map((m) => [m.name, m]));
    expect(byName.sequence_initial_state.state).toBe('READY');
    expect(byName.missing_file).toMatchObject({ state: 'UNAVAILABLE' });
    expect(byName.missing_file.reason).toContain(
      "failed to read data_file 'absent.bin' of initial state 'hundred' for state input 'ACC_IN' in model 'missing_file': ENOENT",
    );
    expect(byName.short_file).toMatchObject({ state: 'UNAVAILABLE' });
    expect(byName.short_file.reason).toContain('initial_state setting expects 8 bytes, but the data provided from start.bin only has 4 bytes.');
  });
});
