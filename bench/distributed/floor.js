#!/usr/bin/env node
'use strict';
// bench/distributed, the floor under issue 13's ratio: what three bare Node processes relaying
// `simple`'s requests through Redis streams reach when they do nothing else, against the embedded
// Nereid, in one run. The bare relay is the cheapest form of the distributed path: a node:http
// gateway that passes the body as it came (no JSON parse, no checks, no codec), a scheduler that
// moves each entry from the request stream to the work stream (XREADGROUP, XADD, XACK + XDEL),
// a worker that parses the JSON, adds and subtracts the 16 INT32s and writes the answer's JSON to
// the gateway's mailbox stream, the gateway reading its mailbox with XREAD. Each process writes a
// turn's commands as one ioredis pipeline, reads up to 1,000 entries per read, and blocks on
// reads (no polling). No fencing, leases, heartbeats, cancel or redelivery: anything Nereid's
// roles do is on top of this.
// Usage: node bench/distributed/floor.js [seconds=8] [rounds=2]
//   (after `npm run build`; needs redis-server)
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ROOT, freePort, startNereid, stop, simpleBody, postLoad, fmt } = require('../lib/util');
const { cpuMs, startRedis, stopAll } = require('./procs');

const [, , first, ...rest] = process.argv;
if (first === '--part') part(rest[0], rest[1], Number(rest[2] || 0));
else main(Number(first || 8), Number(rest[0] || 2)).catch((e) => {
  console.error(e);
  process.exit(1);
});

/** One bare role: `gateway` (with its HTTP port), `scheduler` or `worker`. */
async function part(role, redisUrl, httpPort) {
  const Redis = require('ioredis');
  const out = new Redis(redisUrl);
  const reader = new Redis(redisUrl);
  /** This turn's commands, written as one pipeline at its end. */
  let turn = [];
  const send = (...cmd) => {
    if (turn.length === 0) setImmediate(flush);
    turn.push(cmd);
  };
  const flush = () => {
    const cmds = turn;
    turn = [];
    out.pipeline(cmds).exec().catch(() => undefined);
  };
  const fields = (entry) => entry[1];

  if (role === 'gateway') {
    const mailbox = `mbox:${process.pid}`;
    const waiting = new Map();
    let next = 0;
    http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const id = String(++next);
        waiting.set(id, res);
        send('xadd', 'req', '*', 'id', id, 'to', mailbox, 'body', Buffer.concat(chunks));
      });
    }).listen(httpPort, '127.0.0.1');
    let last = '0-0';
    for (;;) {
      const got = await reader.xreadBuffer('COUNT', 1000, 'BLOCK', 0, 'STREAMS', mailbox, last);
      const ids = [];
      for (const [, entries] of got) {
        for (const entry of entries) {
          const f = fields(entry);
          const res = waiting.get(f[1].toString());
          waiting.delete(f[1].toString());
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': f[3].length });
          res.end(f[3]);
          last = entry[0].toString();
          ids.push(last);
        }
      }
      send('xdel', mailbox, ...ids);
    }
  }

  const stream = role === 'scheduler' ? 'req' : 'work';
  await reader.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM').catch(() => undefined);
  for (;;) {
    const got = await reader.xreadgroupBuffer('GROUP', 'g', 'c', 'COUNT', 1000, 'BLOCK', 0, 'STREAMS', stream, '>');
    const ids = [];
    for (const [, entries] of got) {
      for (const entry of entries) {
        const f = fields(entry);
        ids.push(entry[0]);
        if (role === 'scheduler') {
          send('xadd', 'work', '*', 'id', f[1], 'to', f[3], 'body', f[5]);
        } else {
          const body = JSON.parse(f[5].toString());
          const a = body.inputs[0].data;
          const b = body.inputs[1].data;
          const answer = JSON.stringify({
            model_name: 'simple',
            model_version: '1',
            outputs: [
              { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: a.map((x, i) => x + b[i]) },
              { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: a.map((x, i) => x - b[i]) },
            ],
          });
          send('xadd', f[3], '*', 'id', f[1], 'body', answer);
        }
      }
    }
    send('xack', stream, 'g', ...ids);
    send('xdel', stream, ...ids);
  }
}

/** Runs the load against `url` for `seconds`, with the CPU each of `pids` spent per request. */
async function measure(url, seconds, pids) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  const r = await postLoad(url, simpleBody(), { connections: 64, duration: seconds });
  const cpu = Object.entries(pids).map(([k, pid]) => `${k} ${fmt(((cpuMs(pid) - before[k]) * 1000) / r.requests.total)}`);
  return { rps: r.requests.average, p50: r.latency.p50, errors: r.errors + r.non2xx, cpu: cpu.join(', ') };
}

async function main(seconds, rounds) {
  const os = require('node:os');
  console.log(`bench/distributed/floor: simple, 64 connections, ${seconds}s per run, ${rounds} round(s), ${os.cpus().length} cpus, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const results = { embedded: [], bare: [] };
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-floor-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  for (let round = 0; round < rounds; round++) {
    {
      const server = await startNereid(repo, []);
      try {
        const url = `http://127.0.0.1:${server.http}/v2/models/simple/infer`;
        await postLoad(url, simpleBody(), { connections: 64, duration: 2 });
        const m = await measure(url, seconds, { nereid: server.child.pid });
        results.embedded.push(m.rps);
        console.log(`embedded Nereid   ${fmt(m.rps)} req/s   p50 ${m.p50} ms   errors ${m.errors}   CPU us/request: ${m.cpu}`);
      } finally {
        await server.stop();
      }
    }
    {
      const redis = await startRedis();
      const port = await freePort();
      const procs = [];
      const launch = (role, p = 0) => {
        const child = spawn(process.execPath, [__filename, '--part', role, redis.url, String(p)], { stdio: 'inherit' });
        procs.push({ stop: () => stop(child) });
        return child.pid;
      };
      try {
        const pids = { worker: launch('worker'), scheduler: launch('scheduler'), gateway: launch('gateway', port), redis: redis.child.pid };
        await new Promise((r) => setTimeout(r, 1000));
        const url = `http://127.0.0.1:${port}/v2/models/simple/infer`;
        await postLoad(url, simpleBody(), { connections: 64, duration: 2 });
        const m = await measure(url, seconds, pids);
        results.bare.push(m.rps);
        console.log(`bare Redis relay  ${fmt(m.rps)} req/s   p50 ${m.p50} ms   errors ${m.errors}   CPU us/request: ${m.cpu}`);
      } finally {
        await stopAll(procs);
        await redis.stop();
      }
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const ratio = median(results.bare) / median(results.embedded);
  console.log(`bare relay / embedded Nereid: ${ratio.toFixed(2)}x (medians; the ceiling of issue 13's >= 0.5x on this machine for a path over Redis streams)`);
  fs.rmSync(repo, { recursive: true, force: true });
  console.log(`load average at the end: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
}
