'use strict';
// CPU time of processes (Linux /proc), for benchmarks that report CPU per request: unlike latency,
// it hardly moves when other work shares the machine.
const fs = require('node:fs');

/** CPU nanoseconds used so far by every thread of process `pid`, or NaN when unknown. */
function processCpuNs(pid) {
  try {
    let total = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      total += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    }
    return total;
  } catch {
    return NaN;
  }
}

/** Pids of the live children of `pid` (all its threads'). */
function childPids(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

/** CPU nanoseconds of `pid` and of its children, now. */
function treeCpuNs(pid) {
  const children = childPids(pid);
  return { self: processCpuNs(pid), children: children.reduce((sum, c) => sum + (processCpuNs(c) || 0), 0) };
}

module.exports = { processCpuNs, childPids, treeCpuNs };
