import { parseMetricsConfig } from './metrics-config';
import { NereidMetrics } from './nereid-metrics';
import type { ModelCounts, ServedVersion } from './stats-port';

describe('NereidMetrics: python stub restarts', () => {
  const zero = { count: 0, ns: 0 };
  const counts: ModelCounts = { inferenceCount: 0, executionCount: 0, success: zero, queue: zero, computeInput: zero, computeInfer: zero, computeOutput: zero, failuresByReason: new Map() };
  let served: ServedVersion[];
  let metrics: NereidMetrics;
  beforeEach(() => {
    served = [];
    metrics = new NereidMetrics({ settings: parseMetricsConfig([]), cpu: false, intervalMs: 2000 });
    metrics.attach({ served: () => served, pending: () => 0, inflight: () => 0, sequenceSlotsInUse: () => undefined });
  });
  /** Loads version 1 of `model`: its observer is made while the version serving now (if any) still serves, then it serves. */
  const load = (model: string, tags: Record<string, string> = {}): void => {
    const observer = metrics.observerFor(model, 1);
    served = [...served.filter((v) => v.model !== model), { model, version: '1', key: `${model}/1`, tags, counts, loadSecs: 0, observer }];
  };
  const restarts = async () => (await metrics.expose()).split('\n').filter((l) => l.startsWith('nereid_python_stub_restarts_total{'));

  it("shows a served version's restarts with its metric_tags; an unloaded version's leave, a new load starts from none", async () => {
    load('p', { team: 'ml' });
    load('q');
    metrics.custom.stubRestarted('p', 1);
    metrics.custom.stubRestarted('p', 1);
    expect(await restarts()).toEqual(['nereid_python_stub_restarts_total{_team="ml",model="p",version="1"} 2']);
    // A reload (the version serves while its replacement loads) carries the count on.
    load('p', { team: 'ml' });
    expect(await restarts()).toEqual(['nereid_python_stub_restarts_total{_team="ml",model="p",version="1"} 2']);
    // Unloaded: gone at once; loaded again (no scrape between or not): from none.
    served = served.filter((v) => v.model !== 'p');
    expect(await restarts()).toEqual([]);
    load('p');
    expect(await restarts()).toEqual([]);
    metrics.custom.stubRestarted('p', 1);
    expect(await restarts()).toEqual(['nereid_python_stub_restarts_total{model="p",version="1"} 1']);
  });
});
