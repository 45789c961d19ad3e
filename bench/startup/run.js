#!/usr/bin/env node
'use strict';
// bench/startup: time from process start to ready, and resident memory once ready, for Nereid
// serving the bundled models/ and for the baseline (a bare node:http + onnxruntime-node server
// loading the `simple` model), in one run. Targets: Nereid ready in < 2 s, RSS < 200 MB.
// Usage: node bench/startup/run.js [runs=3]   (needs `npm run build` first)
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, startNereid, startScript, fmt } = require('../lib/util');

const RUNS = Number(process.argv[2] || 3);

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** RSS of the direct children (python model processes), for the record. */
function childrenRssMb(pid) {
  let total = 0;
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) total += rssMb(Number(d));
    } catch {
      /* process went away */
    }
  }
  return total;
}

async function main() {
  const nereid = [];
  const baseline = [];
  for (let i = 0; i < RUNS; i++) {
    const n = await startNereid(path.join(ROOT, 'models'));
    await new Promise((r) => setTimeout(r, 300));
    nereid.push({ ready: n.readyMs, rss: rssMb(n.child.pid), children: childrenRssMb(n.child.pid) });
    await n.stop();
    const t0 = Date.now();
    const b = await startScript(path.join(ROOT, 'bench/http-infer/baseline-server.js'), [path.join(ROOT, 'models/simple/1/model.onnx')]);
    const ready = Date.now() - t0;
    await new Promise((r) => setTimeout(r, 300));
    baseline.push({ ready, rss: rssMb(b.child.pid) });
    await b.stop();
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const nReady = med(nereid.map((r) => r.ready));
  const nRss = med(nereid.map((r) => r.rss));
  const bReady = med(baseline.map((r) => r.ready));
  const bRss = med(baseline.map((r) => r.rss));
  console.log(`bench/startup: median of ${RUNS} runs`);
  console.log(`nereid (models/: ${fs.readdirSync(path.join(ROOT, 'models')).join(', ')})`);
  console.log(`  ready ${nReady} ms (target < 2000)   RSS ${fmt(nRss, 0)} MB (target < 200)   python model processes ${fmt(med(nereid.map((r) => r.children)), 0)} MB`);
  console.log(`baseline (node:http + onnxruntime-node, simple only)`);
  console.log(`  ready ${bReady} ms   RSS ${fmt(bRss, 0)} MB`);
  console.log(`ratio nereid/baseline: ready ${fmt(nReady / bReady, 2)}x   RSS ${fmt(nRss / bRss, 2)}x`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
