/**
 * End-to-end (built dist, own process: onnxruntime writes its log to the process's stderr): loading
 * ONNX models runs a probe that times the model, and that probe must neither feed a model data it
 * cannot take nor make onnxruntime print errors about a healthy model. simple_string parses its
 * string inputs as integers ('' made it fail with "stoll"); sequence_start has a START input its
 * config names only as a sequence control ("Missing Input: START").
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { loopbackPorts, MAIN } from './helpers/built-server';
import { makeRepository, ROOT } from './helpers/server';

const ONNX = path.join(ROOT, 'test/fixtures/onnx');

describe('ONNX load-time probe', () => {
  let child: ChildProcess | undefined;
  afterAll(() => child?.kill());

  it('loads models without onnxruntime error output, and serves the one that works', async () => {
    const repo = makeRepository({
      simple_string: path.join(ONNX, 'simple_string'),
      sequence_start: path.join(ONNX, 'sequence_start'),
    });
    const { http, args } = await loopbackPorts();
    child = spawn(
      process.execPath,
      [MAIN, 'serve', '--model-repository', repo, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const base = `http://127.0.0.1:${http}`;
    const index = async (): Promise<{ name: string; state?: string; reason?: string }[] | undefined> => {
      const r = await fetch(`${base}/v2/repository/index`, { method: 'POST', body: '{}' }).catch(() => undefined);
      return r?.status === 200 ? ((await r.json()) as { name: string; state?: string; reason?: string }[]) : undefined;
    };
    const deadline = Date.now() + 30_000;
    let models = await index();
    while (!models || models.length < 2 || models.some((m) => m.state === undefined || m.state === 'LOADING')) {
      if (Date.now() > deadline) throw new Error(`server not up; output:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
      models = await index();
    }
    // onnxruntime's own log lines look like `[E:onnxruntime:, sequential_executor.cc:572 ...]`.
    expect(output).not.toMatch(/\[[EW]:onnxruntime/);
    expect(output).not.toMatch(/stoll|Missing Input|Non-zero status code/);
    expect(models.find((m) => m.name === 'simple_string')?.state).toBe('READY');
    // Its START control is a graph input the config lists only as a sequence control: it loads.
    expect(models.find((m) => m.name === 'sequence_start')?.state).toBe('READY');

    const strings = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));
    const r = await fetch(`${base}/v2/models/simple_string/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [
          { name: 'INPUT0', datatype: 'BYTES', shape: [1, 16], data: strings(16, (i) => String(i)) },
          { name: 'INPUT1', datatype: 'BYTES', shape: [1, 16], data: strings(16, () => '2') },
        ],
      }),
    });
    const body = (await r.json()) as { outputs: { name: string; data: string[] }[] };
    expect(body.outputs.find((o) => o.name === 'OUTPUT0')?.data).toEqual(strings(16, (i) => String(i + 2)));
    expect(body.outputs.find((o) => o.name === 'OUTPUT1')?.data).toEqual(strings(16, (i) => String(i - 2)));

  }, 60_000);
});
