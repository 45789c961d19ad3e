import { parseServeArgs, UsageError } from './cli-parser';

const REPO = '--model-repository=/tmp/none';

function traceOf(...args: string[]) {
  return parseServeArgs([REPO, ...args]).trace;
}

describe('--trace-config', () => {
  it("reads Triton's global and per-mode forms", () => {
    const t = traceOf(
      '--trace-config', 'level=TIMESTAMPS', '--trace-config', 'level=TENSORS', '--trace-config', 'rate=100', '--trace-config', 'count=5',
      '--trace-config', 'triton,file=/tmp/t.json', '--trace-config', 'triton,log-frequency=50',
    );
    expect(t).toMatchObject({ level: ['TIMESTAMPS', 'TENSORS'], rate: 100, count: 5, mode: 'triton', file: '/tmp/t.json', logFrequency: 50 });
    expect(traceOf('--trace-config', 'level=TIMESTAMPS', '--trace-config', 'level=OFF').level).toEqual(['OFF']);
  });

  it('reads the OpenTelemetry settings, and the deprecated flags', () => {
    const t = traceOf(
      '--trace-config', 'mode=opentelemetry', '--trace-config', 'opentelemetry,url=collector:4318/v1/traces',
      '--trace-config', 'opentelemetry,resource=service.name=svc', '--trace-config', 'opentelemetry,bsp_schedule_delay=100',
    );
    expect(t.mode).toBe('opentelemetry');
    expect(t.otel).toMatchObject({ url: 'http://collector:4318/v1/traces', resource: { 'service.name': 'svc' }, bspScheduleDelayMs: 100, bspMaxQueueSize: 2048 });
    expect(traceOf('--trace-file=/tmp/d.json', '--trace-rate=7', '--trace-level=TIMESTAMPS', '--trace-count=-1', '--trace-log-frequency=3', '--trace-dir=/tmp'))
      .toMatchObject({ file: '/tmp/d.json', rate: 7, level: ['TIMESTAMPS'], count: -1, logFrequency: 3, dir: '/tmp' });
  });

  it('refuses what it does not know, in the usage error form', () => {
    const run = (v: string) => () => parseServeArgs([REPO, '--trace-config', v]);
    expect(run('rate=x')).toThrow(UsageError);
    expect(run('rate=x')).toThrow('Bad option: "--trace-config".\ninvalid value for trace setting \'rate\': x');
    expect(run('level=LOUD')).toThrow("invalid value for trace setting 'level': LOUD");
    expect(run('mode=zipkin')).toThrow("invalid value for trace setting 'mode': zipkin");
    expect(run('triton,url=x')).toThrow("unknown trace setting 'url' for mode triton");
    expect(run('nonsense')).toThrow("--trace-config option format is '<mode>,<setting>=<value>' or '<setting>=<value>'. Got nonsense");
  });
});
