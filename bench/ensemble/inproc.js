#!/usr/bin/env node
'use strict';
// bench/ensemble/inproc.js: the server's own CPU time per request on the ensemble's path, in one
// process, without HTTP (what run.js calls d and s, measured as CPU rather than wall time, so
// that a shared machine's load spoils it less). An embedded Nereid (dist/) is started here with
// its front doors off, and requests go straight to core.infer, one at a time:
//   instant ensemble: add_sub_mul over two steps of a backend that answers at once, in the
//     call (`instant`, below): the ensemble scheduler and the core's path of its two steps (d + 2s
//     without the python backend's dispatch);
//   instant chain: the same two models called one after the other (2s without the ensemble);
//   python ensemble / python add_sub / python mul: the real python models (each step's dispatch to
//     its stub and back as well; the stubs' own CPU is not in this process's figure).
// Each kind runs in rounds, alternated; the figure is process CPU (user + system, all threads) per
// request, the median of the rounds. `--root=DIR` uses DIR's dist/ (a private build, see RULES);
// `--ab=DIR2` starts a second server from DIR2's dist/ in the same process and alternates the two
// builds round by round, kind by kind (the same minutes, the same load). On the shared 2-core
// machine at load 6-20 the python kinds still swung 2-3x between runs (the stubs' wake-ups); the
// instant kinds less. For a few-µs A/B prefer instruction counts (scheduler-micro.js). Not a test.
// Usage: node bench/ensemble/inproc.js [requests per round=2000] [rounds=5] [--root=DIR] [--ab=DIR2] [--only=instant|python]
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ensembleRepo } = require('./repo');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name, dflt) => (process.argv.find((a) => a.startsWith(`--${name}=`)) ?? `--${name}=${dflt}`).slice(name.length + 3);
const ROOTS = [path.resolve(flag('root', path.join(__dirname, '../..')))];
if (flag('ab', '')) ROOTS.push(path.resolve(flag('ab', '')));
const ONLY = flag('only', '');
const N = Number(args[0] || 2000);
const ROUNDS = Number(args[1] || 5);

/** One build's modules (its dist/). */
function build(root) {
  const dist = (p) => require(path.join(root, 'dist', p));
  return {
    root,
    serve: dist('apps/nereid/src/serve.js'),
    defaultServeOptions: dist('apps/nereid/src/cli-options.js').defaultServeOptions,
    newInferenceRequest: dist('libs/protocol/src/index.js').newInferenceRequest,
  };
}

/** A backend whose instances answer every request at once, in the execute call: y = x for each mapped output. */
const instantBackend = {
  name: 'instant',
  defaultModelFilename: 'model.instant',
  async loadInstance(ctx) {
    const outputs = (ctx.config.output ?? []).map((o) => o.name);
    return {
      execute(items, report) {
        for (const item of items) {
          const inputs = item.request.inputs;
          const response = {
            id: item.request.id,
            modelName: ctx.config.name,
            modelVersion: String(ctx.version),
            outputs: outputs.map((name, i) => ({ ...inputs[i % inputs.length], name })),
          };
          item.sink.send(response, true);
        }
        report?.(items, { execStart: performance.now(), inputNs: 0, inferNs: 0, outputNs: 0 });
        return Promise.resolve();
      },
      async unload() {},
    };
  },
};

function instantModel(repo, name, inputs, outputs) {
  const dir = path.join(repo, name);
  fs.mkdirSync(path.join(dir, '1'), { recursive: true });
  fs.writeFileSync(path.join(dir, '1', 'model.instant'), '');
  const io = (names) => names.map((n) => `{ name: "${n}" data_type: TYPE_FP32 dims: [ 4 ] }`).join(',\n  ');
  fs.writeFileSync(path.join(dir, 'config.pbtxt'), `name: "${name}"\nbackend: "instant"\nmax_batch_size: 0\n` +
    `input [\n  ${io(inputs)}\n]\noutput [\n  ${io(outputs)}\n]\ninstance_group [ { kind: KIND_CPU count: 1 } ]\n`);
}

function makeRepo(root) {
  const repo = ensembleRepo('nereid-ensemble-inproc-', root);
  instantModel(repo, 'add_sub_i', ['add_sub_input0', 'add_sub_input1'], ['added_output', 'subbed_output']);
  instantModel(repo, 'mul_i', ['mul_input0', 'mul_input1'], ['mul_output']);
  const text = fs.readFileSync(path.join(repo, 'add_sub_mul', 'config.pbtxt'), 'utf8');
  fs.mkdirSync(path.join(repo, 'add_sub_mul_i', '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'add_sub_mul_i', 'config.pbtxt'), text
    .replace('name: "add_sub_mul"', 'name: "add_sub_mul_i"')
    .replace('model_name: "add_sub"', 'model_name: "add_sub_i"')
    .replace('model_name: "mul"', 'model_name: "mul_i"'));
  return repo;
}

const fp32 = (name, values) => ({ name, datatype: 'FP32', shape: [4], data: Float32Array.from(values) });
const A = [3, 4, 5, 6];
const B = [1, 2, 3, 4];

function request(b, model, inputs) {
  const r = b.newInferenceRequest(model, -1);
  for (const t of inputs) r.inputs.push(t);
  return r;
}

/** One request through core.infer; resolves with its final response. */
function infer(core, req) {
  return new Promise((resolve, reject) => {
    let last;
    core.infer(req, {
      onResponse: (r, final) => {
        if (r) last = r;
        if (final) resolve(last);
      },
      onError: reject,
    });
  });
}

const out = (res, name) => res.outputs.find((o) => o.name === name);

const KINDS = {
  'instant ensemble': (b, core) => infer(core, request(b, 'add_sub_mul_i', [fp32('INPUT_A', A), fp32('INPUT_B', B)])),
  'instant chain': async (b, core) => {
    const first = await infer(core, request(b, 'add_sub_i', [fp32('add_sub_input0', A), fp32('add_sub_input1', B)]));
    const s = out(first, 'added_output');
    const d = out(first, 'subbed_output');
    return infer(core, request(b, 'mul_i', [{ ...s, name: 'mul_input0' }, { ...d, name: 'mul_input1' }]));
  },
  'python ensemble': (b, core) => infer(core, request(b, 'add_sub_mul', [fp32('INPUT_A', A), fp32('INPUT_B', B)])),
  'python add_sub': (b, core) => infer(core, request(b, 'add_sub', [fp32('add_sub_input0', A), fp32('add_sub_input1', B)])),
  'python mul': (b, core) => infer(core, request(b, 'mul', [fp32('mul_input0', [4, 6, 8, 10]), fp32('mul_input1', [2, 2, 2, 2])])),
};

/** An embedded server of build `b` (front doors off) on a fresh copy of the models. */
async function startServer(b) {
  const repo = makeRepo(b.root);
  const options = { ...b.defaultServeOptions(), modelRepositories: [repo], allowHttp: false, allowGrpc: false, allowMetrics: false, logInfo: false };
  const backends = (await b.serve.defaultBackends(options)).register(instantBackend);
  const server = await b.serve.startNereid(options, { backends });
  return {
    run: (kind) => KINDS[kind](b, server.core),
    async close() {
      await server.close();
      fs.rmSync(repo, { recursive: true, force: true });
    },
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const kinds = Object.keys(KINDS).filter((k) => !ONLY || k.startsWith(ONLY));
  console.log(`bench/ensemble/inproc: ${ROOTS.join(' vs ')}, ${os.cpus().length} cpus, node ${process.version}, ${ROUNDS} rounds of ${N} ` +
    `requests per kind${ROOTS.length > 1 ? ' and build' : ''}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const servers = [];
  for (const root of ROOTS) servers.push(await startServer(build(root)));
  // Per build and kind: CPU and wall µs per request of each round.
  const rounds = servers.map(() => Object.fromEntries(kinds.map((k) => [k, { cpu: [], wall: [] }])));
  try {
    for (const s of servers) for (const k of kinds) for (let i = 0; i < Math.max(500, N / 2); i++) await s.run(k);
    for (let round = 0; round < ROUNDS; round++) {
      // Builds alternate which goes first, round by round.
      const order = servers.map((_, i) => i);
      if (round % 2 === 1) order.reverse();
      for (const k of kinds) {
        for (const i of order) {
          const cpu0 = process.cpuUsage();
          const t0 = performance.now();
          for (let n = 0; n < N; n++) await servers[i].run(k);
          const wall = performance.now() - t0;
          const cpu = process.cpuUsage(cpu0);
          rounds[i][k].cpu.push((cpu.user + cpu.system) / N);
          rounds[i][k].wall.push((wall * 1000) / N);
        }
      }
    }
    console.log(`load average after ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}; medians of the rounds`);
    for (const k of kinds) {
      for (let i = 0; i < servers.length; i++) {
        const label = ROOTS.length > 1 ? `${'AB'[i]} ${k}` : k;
        console.log(`${label.padEnd(19)} CPU ${median(rounds[i][k].cpu).toFixed(1).padStart(6)} µs per request   wall ${median(rounds[i][k].wall).toFixed(1).padStart(6)} µs`);
      }
    }
  } finally {
    for (const s of servers) await s.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
