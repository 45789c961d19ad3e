import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ModelConfig, ModelWarmupInput } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { buildWarmupSamples, DEFAULT_MAX_WARMUP_BYTES, MAX_WARMUP_BATCH_BYTES } from './warmup';

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-warmup-'));
fs.mkdirSync(path.join(folder, 'warmup'));
afterAll(() => fs.rmSync(folder, { recursive: true, force: true }));

/** A model whose inputs are the sample's (as the model declares them), with one warmup sample. */
const config = (inputs: Record<string, ModelWarmupInput>, batchSize = 1, maxBatchSize = 8): ModelConfig => ({
  name: 'simple',
  max_batch_size: maxBatchSize,
  input: Object.entries(inputs).map(([name, i]) => ({ name, data_type: i.data_type, dims: i.dims })),
  model_warmup: [{ name: 'w', batch_size: batchSize, inputs }],
});

async function failure(promise: Promise<unknown>): Promise<InferenceError> {
  const e = await promise.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(InferenceError);
  return e as InferenceError;
}

describe('buildWarmupSamples: sizes a sample before it allocates it', () => {
  it('builds a sample within the bound; a STRING sample is one shared empty element, repeated per batch without a spread', async () => {
    const t0 = performance.now();
    const [sample] = await buildWarmupSamples(config({ IN: { data_type: 'TYPE_STRING', dims: [4_000_000], zero_data: true } }, 2), folder);
    const data = sample.inputs[0].data as Uint8Array[];
    expect(sample.inputs[0].shape).toEqual([2, 4_000_000]);
    expect(data.length).toBe(8_000_000);
    expect(data[0]).toBe(data[7_999_999]);
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it("refuses a sample over the bound (default --http-max-input-size, 64 MiB) in Triton's words, before allocating", async () => {
    expect(DEFAULT_MAX_WARMUP_BYTES).toBe(64 * 1024 * 1024);
    const e = await failure(buildWarmupSamples(config({ IN: { data_type: 'TYPE_STRING', dims: [100_000_000], zero_data: true } }), folder));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe(
      "failed to run warmup sample 'w': warmup input 'IN' of model 'simple' with shape [1,100000000] takes a row of the sample to 400000000 bytes, " +
        'more than the maximum allowed input size of 67108864 bytes. Use --http-max-input-size to increase the limit.',
    );
  });

  it('bounds one row of the sample by --http-max-input-size and its whole batch by MAX_WARMUP_BATCH_BYTES', async () => {
    const fp32 = (n: number): ModelWarmupInput => ({ data_type: 'TYPE_FP32', dims: [n], random_data: true });
    // A row of 64 bytes in a batch of 5 (320 bytes): the row is what a client's request would hold.
    await expect(buildWarmupSamples(config({ A: fp32(16) }, 5), folder, 256)).resolves.toHaveLength(1);
    // A usual image warmup: 16 x 3x640x640 FP32 (79 MB) loads at the default bound.
    const image: ModelWarmupInput = { data_type: 'TYPE_FP32', dims: [3, 640, 640], zero_data: true };
    const [images] = await buildWarmupSamples(config({ IMG: image }, 16, 16), folder);
    expect(images.inputs[0].shape).toEqual([16, 3, 640, 640]);
    // Every input of a row counts together.
    const both = await failure(buildWarmupSamples(config({ A: fp32(40), B: fp32(40) }), folder, 256));
    expect(both.message).toContain("warmup input 'B' of model 'simple' with shape [1,40] takes a row of the sample to 320 bytes");
    // The batch's copies count against the whole-sample bound, before anything is allocated.
    expect(MAX_WARMUP_BATCH_BYTES).toBe(1024 * 1024 * 1024);
    const batch = await failure(buildWarmupSamples(config({ A: { ...fp32(1 << 20), random_data: false, zero_data: true } }, 300, 1000), folder));
    expect(batch.message).toContain(
      "warmup input 'A' of model 'simple' with shape [300,1048576] takes the sample's batch to 1258291200 bytes, more than the 1073741824 bytes a warmup sample may hold",
    );
    // The bound is per sample: two samples of 160 bytes each pass.
    const two: ModelConfig = { ...config({ A: fp32(40) }), model_warmup: [config({ A: fp32(40) }).model_warmup![0], { name: 'v', batch_size: 1, inputs: { A: fp32(40) } }] };
    await expect(buildWarmupSamples(two, folder, 256)).resolves.toHaveLength(2);
  });

  it('refuses a shape whose count JavaScript cannot hold exactly, with the decoders\' words', async () => {
    const big = { data_type: 'TYPE_INT32', dims: [2147483647, 2147483647, 2147483647], zero_data: true };
    const e = await failure(buildWarmupSamples(config({ IN: big }), folder));
    expect(e.message).toBe(
      "failed to run warmup sample 'w': the shape [1,2147483647,2147483647,2147483647] of input 'IN' for model 'simple' has a byte size beyond 9007199254740991 bytes",
    );
  });

  it("checks a sample against the model's inputs as a request, before making its data", async () => {
    const model = config({ INPUT0: { data_type: 'TYPE_INT32', dims: [16], zero_data: true } });
    const strings: ModelConfig = { ...model, model_warmup: [{ name: 'w', batch_size: 1, inputs: { INPUT0: { data_type: 'TYPE_STRING', dims: [8_000_000], zero_data: true } } }] };
    const t0 = performance.now();
    const e = await failure(buildWarmupSamples(strings, folder));
    expect(e.message).toBe("failed to run warmup sample 'w': [request id: <id_unknown>] inference input 'INPUT0' data-type is 'BYTES', but model 'simple' expects 'INT32'");
    expect(performance.now() - t0).toBeLessThan(100);
    const shape: ModelConfig = { ...model, model_warmup: [{ name: 'w', batch_size: 1, inputs: { INPUT0: { data_type: 'TYPE_INT32', dims: [8], zero_data: true } } }] };
    expect((await failure(buildWarmupSamples(shape, folder))).message).toContain("unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,8]");
  });

  it("passes inputs the model's config does not declare (sequence controls, states) unchecked, as Triton's override inputs", async () => {
    // Triton's GenerateWarmupData adds a sample input the config does not list (START, READY,
    // CORRID, an implicit state) as an override input after PrepareForInference: it is not
    // validated as a request input. A stateful model's warmup supplies them for the backend.
    const model: ModelConfig = {
      name: 'seq',
      max_batch_size: 4,
      input: [{ name: 'INPUT', data_type: 'TYPE_INT32', dims: [1] }],
      sequence_batching: {
        control_input: [
          { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] },
          { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [0, 1] }] },
        ],
      },
      model_warmup: [
        {
          name: 'w',
          batch_size: 2,
          inputs: {
            INPUT: { data_type: 'TYPE_INT32', dims: [1], zero_data: true },
            START: { data_type: 'TYPE_INT32', dims: [1], zero_data: true },
            READY: { data_type: 'TYPE_INT32', dims: [1], zero_data: true },
          },
        },
      ],
    };
    const [sample] = await buildWarmupSamples(model, folder);
    expect(sample.inputs.map((t) => [t.name, t.shape])).toEqual([
      ['INPUT', [2, 1]],
      ['START', [2, 1]],
      ['READY', [2, 1]],
    ]);
    // The inputs the config declares are still checked, and still all required.
    const missing: ModelConfig = { ...model, model_warmup: [{ name: 'w', batch_size: 1, inputs: { START: model.model_warmup![0].inputs!.START } }] };
    expect((await failure(buildWarmupSamples(missing, folder))).message).toContain("expected 1 inputs but got 0 inputs for model 'seq'");
  });

  it('sizes an input_data_file before reading it', async () => {
    fs.writeFileSync(path.join(folder, 'warmup', 'four.bin'), Buffer.from(Float32Array.of(1, 2, 3, 4).buffer));
    const file = (dims: number[]): ModelWarmupInput => ({ data_type: 'TYPE_FP32', dims, input_data_file: 'four.bin' });
    const [sample] = await buildWarmupSamples(config({ IN: file([4]) }, 1), folder, 16);
    expect(sample.inputs[0].data).toEqual(Float32Array.of(1, 2, 3, 4));
    const big = path.join(folder, 'warmup', 'big.bin');
    fs.closeSync(fs.openSync(big, 'w'));
    fs.truncateSync(big, 1 << 20); // sparse
    const e = await failure(buildWarmupSamples(config({ IN: { ...file([4]), input_data_file: 'big.bin' } }), folder, 1024));
    expect(e.message).toContain("warmup input 'IN' of model 'simple' with shape [1,4] takes a row of the sample to 1048576 bytes, more than the maximum allowed input size of 1024 bytes");
    const strings = await failure(
      buildWarmupSamples(config({ IN: { data_type: 'TYPE_STRING', dims: [1], input_data_file: 'big.bin' } }, 2), folder, 1 << 19),
    );
    expect(strings.message).toContain('takes a row of the sample to 1048576 bytes');
  });
});
