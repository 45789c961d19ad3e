#!/usr/bin/env node
'use strict';
// bench/ensemble/scheduler-micro.js: the ensemble scheduler alone (libs/scheduling's
// EnsembleScheduler from dist/), add_sub_mul's plan over two steps a fake server answers at once,
// in the step call: what one ensemble request costs the scheduler itself (its dataflow, step
// requests, answer, statistics), without the core, the backends or HTTP.
// Usage: node bench/ensemble/scheduler-micro.js [requests=200000] [--root=DIR]
//   prints CPU ns per ensemble request (median of 10 rounds after a warm-up round).
// On a shared machine the CPU figure swings with the load; the instruction count does not:
//   valgrind --tool=lackey --basic-counts=yes node bench/ensemble/scheduler-micro.js N --count
// runs N requests once and nothing else; the difference between two N over their difference is
// the instructions per request (a build's start-up cancels out).
const path = require('node:path');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const ROOT = path.resolve((process.argv.find((a) => a.startsWith('--root=')) ?? `--root=${path.join(__dirname, '../..')}`).slice(7));
const COUNT_ONLY = process.argv.includes('--count');
const N = Number(args[0] ?? 200000);

const { EnsembleScheduler } = require(path.join(ROOT, 'dist/libs/scheduling/src/ensemble-scheduler.js'));
const { newInferenceRequest } = require(path.join(ROOT, 'dist/libs/protocol/src/index.js'));

const dims4 = (name) => ({ name, data_type: 'TYPE_FP32', dims: [4] });
const CONFIG = {
  name: 'add_sub_mul',
  platform: 'ensemble',
  max_batch_size: 0,
  input: [dims4('INPUT_A'), dims4('INPUT_B')],
  output: [dims4('OUTPUT')],
  ensemble_scheduling: {
    step: [
      { model_name: 'add_sub', model_version: -1, input_map: { add_sub_input0: 'INPUT_A', add_sub_input1: 'INPUT_B' }, output_map: { added_output: 'sum', subbed_output: 'difference' } },
      { model_name: 'mul', model_version: -1, input_map: { mul_input0: 'sum', mul_input1: 'difference' }, output_map: { mul_output: 'OUTPUT' } },
    ],
  },
};
const STEP_CONFIGS = {
  add_sub: { name: 'add_sub', max_batch_size: 0, input: [dims4('add_sub_input0'), dims4('add_sub_input1')] },
  mul: { name: 'mul', max_batch_size: 0, input: [dims4('mul_input0'), dims4('mul_input1')] },
};
const tensor = (name) => ({ name, datatype: 'FP32', shape: [4], data: new Float32Array(4) });
const ANSWERS = { add_sub: [tensor('added_output'), tensor('subbed_output')], mul: [tensor('mul_output')] };
const STATS = { execStart: 0, inputNs: 1, inferNs: 1, outputNs: 1 };

/** The server around the scheduler: every step answered and reported at once. */
const services = {
  inferStep(request, sink) {
    sink.send({ id: request.id, modelName: request.modelName, modelVersion: '1', outputs: ANSWERS[request.modelName] }, true);
    sink.executed(STATS);
  },
  modelConfig: (name) => STEP_CONFIGS[name],
  onExecution() {},
};

const scheduler = new EnsembleScheduler(CONFIG, services);
let answered = 0;
const client = { send: (_r, final) => void (final && answered++), fail: (e) => { throw e; }, executed() {} };

function requests(n) {
  for (let i = 0; i < n; i++) {
    const request = newInferenceRequest('add_sub_mul', -1);
    request.inputs.push(tensor('INPUT_A'), tensor('INPUT_B'));
    scheduler.enqueue({ request, sink: client, enqueuedAt: 0 });
  }
}

if (COUNT_ONLY) {
  requests(N);
  if (answered !== N) throw new Error(`${answered} of ${N} answered`);
} else {
  requests(N);
  const rounds = [];
  for (let r = 0; r < 10; r++) {
    const cpu0 = process.cpuUsage();
    requests(N);
    const cpu = process.cpuUsage(cpu0);
    rounds.push(((cpu.user + cpu.system) * 1000) / N);
  }
  rounds.sort((a, b) => a - b);
  console.log(`${ROOT}: ${rounds[5].toFixed(0)} ns CPU per ensemble request (median of 10 rounds of ${N}), load average ${require('node:os').loadavg().map((x) => x.toFixed(1)).join(' ')}`);
}
