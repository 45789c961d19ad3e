/**
 * End-to-end datatype matrix (issue 11): every v2 datatype × {HTTP JSON, HTTP binary, gRPC raw
 * contents, gRPC typed contents} × {ONNX identity, python identity}, with edge values (NaN, -0,
 * infinities, subnormals, integer extremes, 64-bit integers beyond 2^53, BYTES with NUL and bytes
 * that are not UTF-8). Each cell either comes back exactly (compared as bytes) or fails with a
 * clear 400 / INVALID_ARGUMENT; no request may hang (each has a deadline). Real servers: ONNX
 * Runtime sessions and python stub processes.
 */
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { parseJsonText, type DataType } from '@nereid/tensor';
import { DATATYPES, fillerOf, rawOfJson, serializeBytes, valuesOf, type TypedContents, type Values } from './helpers/datatype-values';
import { inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { makeRepository, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

/** Every request's deadline: a request without an answer by then fails the test instead of hanging it. */
const DEADLINE_MS = 15_000;

type Form = 'json' | 'binary' | 'raw' | 'typed';
const FORMS: readonly Form[] = ['json', 'binary', 'raw', 'typed'];

/** A model under test: its datatypes in input order, and whether every input must be sent. */
interface Model {
  name: string;
  datatypes: readonly DataType[];
  allInputs: boolean;
}

interface Backend {
  label: 'onnx' | 'python';
  server: Server;
  client: Client;
  model: Model;
  /** The model for typed contents (ONNX: identity_types has FP16/BF16 inputs, which typed contents cannot carry). */
  typedModel: Model;
}

type Outcome = { ok: Buffer } | { status: number; error: string };

/** What a cell must give: the exact bytes, or an error matching the pattern. */
function expected(backend: Backend['label'], form: Form, datatype: DataType): { bytes: Buffer } | { error: RegExp } {
  const v = valuesOf(datatype);
  if (form === 'json' && (datatype === 'FP16' || datatype === 'BF16')) {
    return { error: new RegExp(`^receiving ${datatype} data via JSON is not supported\\. Please use the binary data format for input IN_${datatype}$`) };
  }
  if (form === 'typed' && (datatype === 'FP16' || datatype === 'BF16')) return { error: new RegExp(`IN_${datatype}`) };
  if (backend === 'onnx' && datatype === 'BYTES') {
    // onnxruntime-node string tensors end at a NUL and hold only text: refused, never altered.
    return { error: /^BYTES element 0 of input 'IN_BYTES' for model '[a-z_]+' holds a NUL byte/ };
  }
  return { bytes: form === 'json' ? v.json.raw : v.raw };
}

let onnx: Backend;
let python: Backend;
let repos: string[] = [];

beforeAll(async () => {
  const onnxRepo = makeRepository({
    identity_types: 'test/fixtures/onnx/identity_types',
    identity_typed_contents: 'test/fixtures/onnx/identity_typed_contents',
  });
  const pythonRepo = makeRepository({ identity_types: 'test/fixtures/python/identity_types' });
  repos = [onnxRepo, pythonRepo];
  const [onnxServer, pythonServer] = await Promise.all([
    startTestServer({ modelRepositories: [onnxRepo] }),
    startTestServer({ modelRepositories: [pythonRepo] }),
  ]);
  const client = (s: Server): Client => inferenceClient(s.grpcPort);
  const all: Model = { name: 'identity_types', datatypes: DATATYPES, allInputs: true };
  const typed: Model = { name: 'identity_typed_contents', datatypes: DATATYPES.filter((d) => d !== 'FP16' && d !== 'BF16'), allInputs: true };
  onnx = { label: 'onnx', server: onnxServer, client: client(onnxServer), model: all, typedModel: typed };
  const optional: Model = { name: 'identity_types', datatypes: DATATYPES, allInputs: false };
  python = { label: 'python', server: pythonServer, client: client(pythonServer), model: optional, typedModel: optional };
  for (const b of [onnx, python]) {
    for (const m of new Set([b.model.name, b.typedModel.name])) {
      expect((await fetch(`${b.server.http}/v2/models/${m}/ready`)).status).toBe(200);
    }
  }
}, 120_000);

afterAll(async () => {
  for (const b of [onnx, python]) {
    b?.client.close();
    await b?.server.close();
  }
  for (const r of repos) fs.rmSync(r, { recursive: true, force: true });
});

/** The inputs of one request: the tested one first, then a one-element filler for each other input the model needs. */
function inputsFor(model: Model, datatype: DataType): { datatype: DataType; tested: boolean }[] {
  const others = model.allInputs ? model.datatypes.filter((d) => d !== datatype) : [];
  return [{ datatype, tested: true }, ...others.map((d) => ({ datatype: d, tested: false }))];
}

/** HTTP: the tested input as JSON (form 'json') or binary, fillers binary; the output in the same form. */
async function httpInfer(
  b: Backend,
  datatype: DataType,
  form: 'json' | 'binary',
  { v = valuesOf(datatype), outputBinary = form === 'binary' }: { v?: Values; outputBinary?: boolean } = {},
): Promise<Outcome> {
  const output = `OUT_${datatype}`;
  const binary: Buffer[] = [];
  const inputs = inputsFor(b.model, datatype).map(({ datatype: d, tested }) => {
    const head = `"name":"IN_${d}","datatype":"${d}"`;
    if (tested && form === 'json') return `{${head},"shape":[1,${v.json.count}],"data":${v.json.text}}`;
    const raw = tested ? v.raw : fillerOf(d).raw;
    binary.push(raw);
    return `{${head},"shape":[1,${tested ? v.count : 1}],"parameters":{"binary_data_size":${raw.length}}}`;
  });
  const json = `{"inputs":[${inputs.join(',')}],"outputs":[{"name":"${output}","parameters":{"binary_data":${outputBinary}}}]}`;
  return postInfer(b, b.model.name, Buffer.concat([Buffer.from(json), ...binary]), Buffer.byteLength(json), output);
}

async function postInfer(b: Backend, model: string, body: Buffer, headerLength: number | undefined, output: string): Promise<Outcome> {
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  if (headerLength !== undefined) headers['inference-header-content-length'] = String(headerLength);
  const r = await fetch(`${b.server.http}/v2/models/${model}/infer`, { method: 'POST', headers, body, signal: AbortSignal.timeout(DEADLINE_MS) });
  const bytes = Buffer.from(await r.arrayBuffer());
  const jsonLength = Number(r.headers.get('inference-header-content-length') ?? bytes.length);
  // NaN and Infinity are read as Triton writes them (Python's json reads them too; JSON.parse does not).
  const answer = parseJsonText(bytes.subarray(0, jsonLength).toString('utf8'), { keepLiterals: true }) as Msg;
  if (r.status !== 200) return { status: r.status, error: answer.error as string };
  const out = (answer.outputs as Msg[]).find((o) => o.name === output);
  if (!out) throw new Error(`no output ${output} in ${JSON.stringify(answer.outputs)}`);
  if (out.data !== undefined) return { ok: rawOfJson(out.datatype as DataType, out.data as unknown[]) };
  return { ok: bytes.subarray(jsonLength, jsonLength + Number(out.parameters.binary_data_size)) };
}

/** gRPC ModelInfer: every input as raw contents, or every input as typed contents. */
function grpcInfer(b: Backend, datatype: DataType, form: 'raw' | 'typed', v: Values = valuesOf(datatype)): Promise<Outcome> {
  const model = form === 'typed' ? b.typedModel : b.model;
  const inputs = inputsFor(model, datatype);
  const tensors = inputs.map(({ datatype: d, tested }) => {
    const t: Msg = { name: `IN_${d}`, datatype: d, shape: [1, tested ? v.count : 1] };
    if (form === 'typed') t.contents = (tested ? v.typed : fillerOf(d).typed) ?? ({} as TypedContents);
    return t;
  });
  const request: Msg = { model_name: model.name, inputs: tensors, outputs: [{ name: `OUT_${datatype}` }] };
  if (form === 'raw') request.raw_input_contents = inputs.map(({ datatype: d, tested }) => (tested ? v.raw : fillerOf(d).raw));
  return new Promise((resolve, reject) => {
    b.client.ModelInfer(request, new grpc.Metadata(), { deadline: Date.now() + DEADLINE_MS }, (err: grpc.ServiceError | null, res: Msg) => {
      if (!err) return resolve({ ok: res.raw_output_contents[0] as Buffer });
      if (err.code === grpc.status.DEADLINE_EXCEEDED) return reject(new Error(`no answer within ${DEADLINE_MS} ms`));
      resolve({ status: err.code, error: err.details });
    });
  });
}

function run(b: Backend, datatype: DataType, form: Form, v: Values = valuesOf(datatype)): Promise<Outcome> {
  return form === 'json' || form === 'binary' ? httpInfer(b, datatype, form, { v }) : grpcInfer(b, datatype, form, v);
}

function check(outcome: Outcome, want: { bytes: Buffer } | { error: RegExp }, form: Form): void {
  if ('bytes' in want) {
    expect(outcome).toEqual({ ok: want.bytes });
  } else {
    const invalid = form === 'json' || form === 'binary' ? 400 : grpc.status.INVALID_ARGUMENT;
    expect(outcome).toEqual({ status: invalid, error: expect.stringMatching(want.error) });
  }
}

const cells = (['onnx', 'python'] as const).flatMap((backend) => FORMS.flatMap((form) => DATATYPES.map((d) => [backend, form, d] as const)));

describe('datatype matrix', () => {
  it.each(cells)('%s %s %s: exact, or a clear 400 / INVALID_ARGUMENT', async (label, form, datatype) => {
    const b = label === 'onnx' ? onnx : python;
    check(await run(b, datatype, form), expected(label, form, datatype), form);
  });
});

describe('datatype edges around the matrix', () => {
  it.each(FORMS)('ONNX carries BYTES that are UTF-8 text without NUL exactly (%s)', async (form) => {
    const text = [Buffer.from('hé ☃', 'utf8'), Buffer.alloc(0), Buffer.from('x')];
    const raw = serializeBytes(text);
    const v: Values = {
      count: text.length,
      raw,
      json: { text: JSON.stringify(text.map((t) => t.toString('utf8'))), count: text.length, raw },
      typed: { bytes_contents: text },
    };
    expect(await run(onnx, 'BYTES', form, v)).toEqual({ ok: raw });
  });

  it.each(['python', 'onnx'] as const)('%s: an FP16/BF16 output asked for as JSON answers 400 and counts a failure, not a success (defect 2)', async (label) => {
    const b = label === 'onnx' ? onnx : python;
    const before = await metrics(b);
    for (const d of ['FP16', 'BF16'] as const) {
      const r = await httpInfer(b, d, 'binary', { outputBinary: false });
      expect(r).toEqual({ status: 400, error: `sending ${d} data via JSON is not supported. Please use the binary data format for output` });
    }
    const after = await metrics(b);
    expect(after.success - before.success).toBe(0);
    expect(after.failure - before.failure).toBe(2);
  });

  it('python: BYTES that are not UTF-8 asked for as JSON answer a clear 400 (never U+FFFD)', async () => {
    const r = await httpInfer(python, 'BYTES', 'binary', { outputBinary: false });
    expect(r).toEqual({
      status: 400,
      error: "sending BYTES data that is not valid UTF-8 via JSON is not supported (element 1 of output 'OUT_BYTES'). Please use the binary data format for output",
    });
  });

  it('a request JSON that is not UTF-8 text is refused, not decoded to U+FFFD', async () => {
    const json = Buffer.concat([Buffer.from('{"inputs":[{"name":"IN_BYTES","datatype":"BYTES","shape":[1,1],"data":["'), Buffer.from([0xff, 0xfe]), Buffer.from('"]}]}')]);
    const r = await postInfer(python, 'identity_types', json, undefined, 'OUT_BYTES');
    expect(r).toEqual({ status: 400, error: expect.stringContaining('failed to parse the request JSON buffer: it is not valid UTF-8 text') });
  });

  it.each([
    ['INT32', '1e-400', 'attempt to access JSON non-signed-integer as signed-integer'],
    ['INT64', '5.0', 'attempt to access JSON non-signed-integer as signed-integer'],
    ['UINT8', '1E2', 'attempt to access JSON non-unsigned-integer as unsigned-integer'],
  ] as const)('an integer tensor refuses the JSON number %s %s (defect 17)', async (datatype, literal, words) => {
    const json = `{"inputs":[{"name":"IN_${datatype}","datatype":"${datatype}","shape":[1,2],"data":[1,${literal}]}]}`;
    const r = await postInfer(python, 'identity_types', Buffer.from(json), undefined, `OUT_${datatype}`);
    expect(r).toEqual({ status: 400, error: expect.stringContaining(`Unable to parse 'data' for input 'IN_${datatype}' for model 'identity_types': ${words}: element 1`) });
  });
});

async function metrics(b: Backend): Promise<{ success: number; failure: number }> {
  const text = await (await fetch(`http://127.0.0.1:${b.server.metricsPort}/metrics`, { signal: AbortSignal.timeout(DEADLINE_MS) })).text();
  const sum = (re: RegExp): number => [...text.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
  return {
    success: sum(/^nv_inference_request_success\{model="identity_types",[^}]*\} (\d+)$/gm),
    failure: sum(/^nv_inference_request_failure\{model="identity_types",[^}]*\} (\d+)$/gm),
  };
}
