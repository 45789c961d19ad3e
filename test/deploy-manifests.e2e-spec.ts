/**
 * The deployment files (docker/Dockerfile, .dockerignore, docker/docker-compose.yml with its Prometheus and
 * Grafana files, docker/k8s/) parsed and checked against each other: every role's command, the Redis URL,
 * Triton's health paths on a port the container listens on, Services that select real pods, the HPA's
 * target, graceful-shutdown timing, every referenced file. No Docker engine or cluster is needed; when
 * `docker-compose` (or `docker compose`) is installed, Compose itself validates the file too.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';

const ROOT = path.resolve(__dirname, '..');
const DOCKER = path.join(ROOT, 'docker');
const K8S = path.join(DOCKER, 'k8s');
const ROLES = ['gateway', 'scheduler', 'worker'];
const LIVE = '/v2/health/live';
const READY = '/v2/health/ready';

type Obj = Record<string, any>;

/** `--name=value` or `--name value`; the last one wins, as in Nereid's CLI. */
function flag(args: string[], name: string): string | undefined {
  let value: string | undefined;
  args.forEach((a, i) => {
    if (a.startsWith(`--${name}=`)) value = a.slice(name.length + 3);
    else if (a === `--${name}` && i + 1 < args.length) value = args[i + 1];
  });
  return value;
}

function rolesOf(args: string[]): string[] {
  return (flag(args, 'role') ?? '').split(',').filter(Boolean);
}

/** The ports a Nereid process listens on, from its flags (defaults as in `nereid serve --help`). */
function listenPorts(args: string[]): { http: number; grpc: number; metrics: number } {
  return {
    http: Number(flag(args, 'http-port') ?? 8000),
    grpc: Number(flag(args, 'grpc-port') ?? 8001),
    metrics: Number(flag(args, 'metrics-port') ?? 8002),
  };
}

function redisTarget(args: string[]): { host: string; port: number } {
  const raw = flag(args, 'redis');
  expect(raw).toMatch(/^rediss?:\/\//);
  const url = new URL(raw!);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

function seconds(duration: string | number): number {
  if (typeof duration === 'number') return duration;
  const m = /^(\d+)(ms|s|m)?$/.exec(duration.trim());
  expect(m).not.toBeNull();
  const n = Number(m![1]);
  return m![2] === 'ms' ? n / 1000 : m![2] === 'm' ? n * 60 : n;
}

// ---------------------------------------------------------------- Dockerfile + .dockerignore

const dockerfile = readFileSync(path.join(DOCKER, 'Dockerfile'), 'utf8');
/** Instructions with their continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'))
  .map((l) => {
    const [op, ...rest] = l.split(/\s+/);
    return { op: op.toUpperCase(), rest: rest.join(' ') };
  });
const stages = instructions.filter((i) => i.op === 'FROM').length;
const lastFrom = instructions.map((i) => i.op).lastIndexOf('FROM');
const runtime = instructions.slice(lastFrom);
const exposed = new Set(
  runtime.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.rest.split(/\s+/).map((p) => Number(p.split('/')[0]))),
);

function dockerignorePatterns(): RegExp[] {
  return readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((p) => {
      expect(p.startsWith('!')).toBe(false); // exceptions are not used (nor handled here)
      const body = p
        .replace(/^\/+|\/+$/g, '')
        .split('**/')
        .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]'))
        .join('(?:.*/)?');
      return new RegExp(`^${body}$`);
    });
}

/** Whether a context path (or a folder above it) is left out of the build context. */
function ignored(patterns: RegExp[], rel: string): boolean {
  const parts = rel.replace(/^\.\/|\/$/g, '').split('/');
  return parts.some((_, i) => patterns.some((re) => re.test(parts.slice(0, i + 1).join('/'))));
}

describe('docker/Dockerfile', () => {
  it('is multi-stage, skips the CUDA download and installs python3 with numpy in the runtime stage', () => {
    expect(stages).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/ENV ONNXRUNTIME_NODE_INSTALL=skip/);
    expect(readFileSync(path.join(ROOT, '.npmrc'), 'utf8')).toMatch(/^onnxruntime-node-install=skip$/m);
    const ci = instructions.findIndex((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.rest));
    const npmrc = instructions.findIndex((i) => i.op === 'COPY' && i.rest.split(/\s+/).includes('.npmrc'));
    expect(npmrc).toBeGreaterThanOrEqual(0);
    expect(npmrc).toBeLessThan(ci);
    expect(runtime.some((i) => i.op === 'RUN' && /python3 python3-numpy/.test(i.rest))).toBe(true);
  });

  it('runs as a non-root user, exposes 8000/8001/8002 and keeps the model repository in a /models volume', () => {
    const user = runtime.filter((i) => i.op === 'USER').pop()?.rest;
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    expect([...exposed].sort()).toEqual([8000, 8001, 8002]);
    expect(runtime.some((i) => i.op === 'VOLUME' && /["\s[]?\/models["\s\]]?/.test(i.rest))).toBe(true);
    const cmd = JSON.parse(runtime.find((i) => i.op === 'CMD')!.rest) as string[];
    expect(flag(cmd, 'model-repository')).toBe('/models');
    expect(JSON.parse(runtime.find((i) => i.op === 'ENTRYPOINT')!.rest)).toEqual(['bin/nereid', 'serve']);
  });

  it("checks health on Triton's /v2/health/ready at the default HTTP port", () => {
    const hc = runtime.find((i) => i.op === 'HEALTHCHECK');
    expect(hc).toBeDefined();
    expect(hc!.rest).toContain(READY);
    expect(hc!.rest).toMatch(/NEREID_HEALTH_PORT\|\|8000/);
  });

  it('copies only files that exist and that .dockerignore keeps in the build context', () => {
    const patterns = dockerignorePatterns();
    const copies = instructions.filter((i) => (i.op === 'COPY' || i.op === 'ADD') && !/--from=/.test(i.rest));
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) {
      const words = c.rest.split(/\s+/).filter((w) => !w.startsWith('--'));
      for (const src of words.slice(0, -1)) {
        expect({ src, exists: existsSync(path.join(ROOT, src)) }).toEqual({ src, exists: true });
        expect({ src, ignored: ignored(patterns, src) }).toEqual({ src, ignored: false });
      }
    }
    // What the build must never ship or upload.
    for (const heavy of ['node_modules', 'dist', '.git', 'libs/x/node_modules']) expect(ignored(patterns, heavy)).toBe(true);
  });
});

// ---------------------------------------------------------------- docker-compose.yml

const compose = parseYaml(readFileSync(path.join(DOCKER, 'docker-compose.yml'), 'utf8'), { merge: true }) as Obj;
const services = compose.services as Record<string, Obj>;
const nereidServices = Object.entries(services).filter(([, s]) => s.build?.dockerfile || /nereid/.test(s.image ?? ''));
const composeRel = (p: string) => path.resolve(DOCKER, p);

/** Bind mounts as [host source, container target]; named volumes are left out. */
function binds(s: Obj): Array<[string, string]> {
  return (s.volumes ?? [])
    .map((v: string | Obj) => (typeof v === 'string' ? v.split(':') : [v.source, v.target]))
    .filter(([src]: string[]) => src.startsWith('.') || src.startsWith('/'))
    .map(([src, dst]: string[]) => [src, dst]);
}

describe('docker/docker-compose.yml', () => {
  it('runs redis, two gateways, a scheduler, two workers, Prometheus and Grafana from one Nereid image', () => {
    const byRole = (role: string) => nereidServices.filter(([, s]) => rolesOf(s.command).includes(role)).length;
    expect(byRole('gateway')).toBe(2);
    expect(byRole('scheduler')).toBeGreaterThanOrEqual(1);
    expect(byRole('worker')).toBe(2);
    expect(services.redis?.image).toMatch(/^redis:/);
    expect(services.prometheus?.image).toMatch(/^prom\/prometheus:/);
    expect(services.grafana?.image).toMatch(/^grafana\/grafana/);
    const images = new Set(nereidServices.map(([, s]) => `${s.image}|${s.build?.context}|${s.build?.dockerfile}`));
    expect(images.size).toBe(1);
    const [, first] = nereidServices[0];
    expect(path.join(composeRel(first.build.context), first.build.dockerfile)).toBe(path.join(DOCKER, 'Dockerfile'));
  });

  it('gives every Nereid service known roles and --redis pointing at the redis service and its port', () => {
    const redisArgs: string[] = services.redis.command ?? [];
    const redisPort = Number(flag(redisArgs, 'port') ?? 6379);
    for (const [name, s] of nereidServices) {
      const roles = rolesOf(s.command);
      expect({ name, roles: roles.length > 0 && roles.every((r) => ROLES.includes(r)) }).toEqual({ name, roles: true });
      expect({ name, redis: redisTarget(s.command) }).toEqual({ name, redis: { host: 'redis', port: redisPort } });
      expect(Object.keys(s.depends_on ?? {})).toContain('redis');
      expect(services.redis.healthcheck.test.join(' ')).toContain(String(redisPort));
    }
  });

  it("checks health on Triton's endpoints at the port each process listens on, and publishes only ports it serves", () => {
    const hostPorts: string[] = [];
    for (const [name, s] of nereidServices) {
      const ports = listenPorts(s.command);
      const test = (s.healthcheck?.test ?? []).join(' ');
      expect({ name, path: /\/v2\/health\/(ready|live)/.test(test) }).toEqual({ name, path: true });
      expect({ name, port: test.includes(`127.0.0.1:${ports.http}/`) }).toEqual({ name, port: true });
      for (const p of s.ports ?? []) {
        const [host, container] = String(p).split(':');
        expect({ name, container: Number(container) }).toEqual({ name, container: expect.any(Number) });
        expect(exposed.has(Number(container))).toBe(true);
        expect(Object.values(ports)).toContain(Number(container));
        hostPorts.push(host);
      }
      // Docker's SIGKILL must not cut Nereid's drain short.
      const exitTimeout = Number(flag(s.command, 'exit-timeout-secs') ?? 30);
      expect(seconds(s.stop_grace_period ?? '10s')).toBeGreaterThan(exitTimeout);
      // The model repository volume is where the command reads it.
      expect(binds(s).map(([, dst]) => dst)).toContain(flag(s.command, 'model-repository'));
    }
    for (const p of [...(services.prometheus.ports ?? []), ...(services.grafana.ports ?? [])]) hostPorts.push(String(p).split(':')[0]);
    expect(new Set(hostPorts).size).toBe(hostPorts.length);
    // Both gateways can be reached from the host.
    const gateways = nereidServices.filter(([, s]) => rolesOf(s.command).includes('gateway'));
    for (const [, s] of gateways) expect((s.ports ?? []).map((p: string) => Number(String(p).split(':')[1]))).toContain(listenPorts(s.command).http);
  });

  it('references only files that exist', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [src] of binds(s)) expect({ name, src, exists: existsSync(composeRel(src)) }).toEqual({ name, src, exists: true });
      if (s.build) expect(existsSync(path.join(composeRel(s.build.context), s.build.dockerfile))).toBe(true);
    }
  });

  it('has Prometheus scrape the metrics port of every Nereid service', () => {
    const config = binds(services.prometheus).find(([, dst]) => dst === '/etc/prometheus/prometheus.yml');
    expect(config).toBeDefined();
    const prom = parseYaml(readFileSync(composeRel(config![0]), 'utf8')) as Obj;
    const targets = prom.scrape_configs.flatMap((job: Obj) => job.static_configs.flatMap((sc: Obj) => sc.targets)).sort();
    const expected = nereidServices.map(([name, s]) => `${name}:${listenPorts(s.command).metrics}`).sort();
    expect(targets).toEqual(expected);
    for (const job of prom.scrape_configs) expect(job.metrics_path ?? '/metrics').toBe('/metrics');
  });

  it("provisions Grafana with the Prometheus service and binds docker/grafana/nereid.json's datasource to it", () => {
    const g = services.grafana;
    const provisioning = binds(g).find(([, dst]) => dst === '/etc/grafana/provisioning');
    expect(provisioning).toBeDefined();
    const dir = composeRel(provisioning![0]);
    const ds = (parseYaml(readFileSync(path.join(dir, 'datasources/prometheus.yml'), 'utf8')) as Obj).datasources[0];
    const promUrl = new URL(ds.url);
    expect(promUrl.hostname).toBe('prometheus');
    expect((services.prometheus.ports as string[]).map((p) => String(p).split(':')[1])).toContain(promUrl.port);
    const provider = (parseYaml(readFileSync(path.join(dir, 'dashboards/nereid.yml'), 'utf8')) as Obj).providers[0];

    // The entrypoint writes the dashboard where the provider reads it, with the datasource input filled in.
    const script = (g.entrypoint as string[]).join(' ').replace(/\$\$/g, '$');
    const dashboardMount = binds(g).find(([src]) => src.endsWith('grafana/nereid.json'));
    expect(dashboardMount).toBeDefined();
    const m = /sed -e '([^']+)' (\S+) > (\S+)/.exec(script);
    expect(m).not.toBeNull();
    expect(m![2]).toBe(dashboardMount![1]);
    expect(path.dirname(m![3])).toBe(provider.options.path);
    expect(script.trim().endsWith('exec /run.sh')).toBe(true);
    const sed = spawnSync('sed', ['-e', m![1], composeRel(dashboardMount![0])], { encoding: 'utf8' });
    expect(sed.status).toBe(0);
    const dashboard = JSON.parse(sed.stdout) as Obj;
    const uids = new Set<string>();
    const walk = (o: unknown): void => {
      if (Array.isArray(o)) o.forEach(walk);
      else if (o && typeof o === 'object') {
        for (const [k, v] of Object.entries(o as Obj)) {
          if (k === 'datasource' && v && typeof v === 'object' && 'uid' in v) uids.add((v as Obj).uid);
          if (k !== '__inputs') walk(v);
        }
      }
    };
    walk(dashboard);
    expect([...uids]).toEqual([ds.uid]);
  });

  it('is valid for Docker Compose itself (when installed)', () => {
    const file = path.join(DOCKER, 'docker-compose.yml');
    // [binary, the command that says Compose is there, the check]
    const candidates: Array<[string, string[], string[]]> = [
      ['docker-compose', ['version'], ['-f', file, 'config', '-q']],
      ['docker', ['compose', 'version'], ['compose', '-f', file, 'config', '-q']],
    ];
    for (const [bin, probe, args] of candidates) {
      // A docker CLI without the compose plugin fails `docker compose version` (and reads `docker compose -f` as a bad global flag).
      const installed = spawnSync(bin, probe, { encoding: 'utf8', timeout: 30000 });
      if (installed.error || installed.status !== 0) continue;
      const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 30000 });
      expect({ bin, status: r.status, stderr: r.stderr.trim() }).toEqual({ bin, status: 0, stderr: '' });
      return;
    }
    console.log('deploy-manifests: neither docker-compose nor `docker compose` is installed; Compose validation not run');
  });
});

// ---------------------------------------------------------------- docker/k8s

const kustomization = parseYaml(readFileSync(path.join(K8S, 'kustomization.yaml'), 'utf8')) as Obj;
const resources: Obj[] = (kustomization.resources as string[]).flatMap((f) => {
  const file = path.join(K8S, f);
  expect(existsSync(file)).toBe(true);
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS() as Obj;
  });
}).filter(Boolean);
const ofKind = (kind: string) => resources.filter((r) => r.kind === kind);
const deployments = ofKind('Deployment');
const nereidDeployments = deployments.filter((d) => d.spec.template.spec.containers.some((c: Obj) => /^nereid(:|$)/.test(c.image)));
const nereidContainer = (d: Obj): Obj => d.spec.template.spec.containers.find((c: Obj) => /^nereid(:|$)/.test(c.image));
const roleOf = (d: Obj): string[] => rolesOf(nereidContainer(d).args);
const selects = (selector: Obj, labels: Obj) => Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/** A probe's or Service's port (number or container port name) as a number, if the container declares it. */
function containerPort(c: Obj, port: number | string): number | undefined {
  return (c.ports as Obj[]).find((p) => p.containerPort === port || p.name === port)?.containerPort;
}

describe('docker/k8s', () => {
  it('lists every manifest in kustomization.yaml, all in the namespace it declares', () => {
    const listed = new Set(kustomization.resources);
    const onDisk = readdirSync(K8S).filter((f: string) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
    expect(onDisk.filter((f: string) => !listed.has(f))).toEqual([]);
    expect(ofKind('Namespace').map((n) => n.metadata.name)).toEqual([kustomization.namespace]);
    expect(kustomization.images.map((i: Obj) => i.name)).toContain('nereid');
  });

  it('has gateway, scheduler and worker Deployments, each matching its own pods', () => {
    expect(nereidDeployments.map(roleOf).flat().sort()).toEqual([...ROLES].sort());
    for (const d of deployments) expect(selects(d.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
  });

  it("probes Triton's health endpoints (startup, live, ready) on the HTTP port the container exposes", () => {
    for (const d of nereidDeployments) {
      const c = nereidContainer(d);
      const http = listenPorts(c.args).http;
      for (const [probe, p] of [['startupProbe', LIVE], ['livenessProbe', LIVE], ['readinessProbe', READY]] as const) {
        const get = c[probe]?.httpGet;
        expect({ name: d.metadata.name, probe, path: get?.path }).toEqual({ name: d.metadata.name, probe, path: p });
        expect({ name: d.metadata.name, probe, port: containerPort(c, get.port) }).toEqual({ name: d.metadata.name, probe, port: http });
      }
      for (const p of c.ports) expect(exposed.has(p.containerPort)).toBe(true);
      expect(c.env.find((e: Obj) => e.name === 'NEREID_HEALTH_PORT')?.value).toBe(String(http));
    }
  });

  it('drains before the kubelet kills: terminationGracePeriodSeconds > preStop sleep + --exit-timeout-secs', () => {
    for (const d of nereidDeployments) {
      const c = nereidContainer(d);
      const cmd: string[] = c.lifecycle.preStop.exec.command;
      expect(cmd[0]).toBe('sleep');
      const exitTimeout = Number(flag(c.args, 'exit-timeout-secs') ?? 30);
      expect(d.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(cmd[1]) + exitTimeout);
    }
  });

  it('sets resource requests and limits on every container', () => {
    for (const d of deployments) {
      for (const c of d.spec.template.spec.containers) {
        for (const kind of ['requests', 'limits']) {
          expect({ name: d.metadata.name, kind, cpu: !!c.resources?.[kind]?.cpu, memory: !!c.resources?.[kind]?.memory })
            .toEqual({ name: d.metadata.name, kind, cpu: true, memory: true });
        }
      }
    }
  });

  it('points --redis at the Redis Service, which selects the Redis pods on the port they expose', () => {
    for (const d of nereidDeployments) {
      const { host, port } = redisTarget(nereidContainer(d).args);
      const svc = ofKind('Service').find((s) => s.metadata.name === host);
      expect({ host, service: !!svc }).toEqual({ host, service: true });
      const sp = svc!.spec.ports.find((p: Obj) => p.port === port);
      expect(sp).toBeDefined();
      const pods = deployments.filter((x) => selects(svc!.spec.selector, x.spec.template.metadata.labels));
      expect(pods.map((x) => x.spec.template.spec.containers[0].image)).toEqual([expect.stringMatching(/^redis:/)]);
      expect(containerPort(pods[0].spec.template.spec.containers[0], sp.targetPort ?? port)).toBe(port);
    }
  });

  it('has Services that select existing pods and target ports those pods declare', () => {
    const services = ofKind('Service');
    expect(services.map((s) => s.metadata.name)).toEqual(expect.arrayContaining(['nereid-gateway']));
    for (const s of services) {
      const pods = deployments.filter((d) => selects(s.spec.selector, d.spec.template.metadata.labels));
      expect({ service: s.metadata.name, pods: pods.length }).toEqual({ service: s.metadata.name, pods: 1 });
      for (const p of s.spec.ports) {
        const c = pods[0].spec.template.spec.containers[0];
        expect({ service: s.metadata.name, port: p.name, target: containerPort(c, p.targetPort ?? p.port) })
          .toEqual({ service: s.metadata.name, port: p.name, target: expect.any(Number) });
      }
    }
    // The gateway Service carries Triton's three ports.
    const gw = services.find((s) => s.metadata.name === 'nereid-gateway')!;
    expect(gw.spec.ports.map((p: Obj) => p.port).sort()).toEqual([8000, 8001, 8002]);
  });

  it('autoscales the worker Deployment (and only it) with an HPA that owns its replica count', () => {
    const hpas = ofKind('HorizontalPodAutoscaler');
    expect(hpas).toHaveLength(1);
    const ref = hpas[0].spec.scaleTargetRef;
    expect(ref.kind).toBe('Deployment');
    const target = deployments.find((d) => d.metadata.name === ref.name);
    expect(target).toBeDefined();
    expect(roleOf(target!)).toEqual(['worker']);
    expect(target!.spec.replicas).toBeUndefined();
    expect(hpas[0].spec.minReplicas).toBeGreaterThanOrEqual(1);
    expect(hpas[0].spec.maxReplicas).toBeGreaterThan(hpas[0].spec.minReplicas);
    // CPU utilisation targets need CPU requests on the target's containers.
    if (hpas[0].spec.metrics.some((m: Obj) => m.resource?.name === 'cpu')) {
      expect(nereidContainer(target!).resources.requests.cpu).toBeDefined();
    }
  });

  it('mounts the model repository volume where --model-repository reads it, from a claim the manifests create', () => {
    const claims = new Set(ofKind('PersistentVolumeClaim').map((c) => c.metadata.name));
    const configMaps = new Set(ofKind('ConfigMap').map((c) => c.metadata.name));
    for (const d of deployments) {
      for (const v of d.spec.template.spec.volumes ?? []) {
        if (v.persistentVolumeClaim) expect(claims.has(v.persistentVolumeClaim.claimName)).toBe(true);
        if (v.configMap) expect(configMaps.has(v.configMap.name)).toBe(true);
      }
    }
    for (const d of nereidDeployments) {
      const c = nereidContainer(d);
      const repo = flag(c.args, 'model-repository');
      const mount = c.volumeMounts.find((m: Obj) => m.mountPath === repo);
      expect({ name: d.metadata.name, mounted: !!mount }).toEqual({ name: d.metadata.name, mounted: true });
      expect(mount.readOnly).toBe(true);
      const volume = d.spec.template.spec.volumes.find((v: Obj) => v.name === mount.name);
      expect(volume.persistentVolumeClaim ?? volume.configMap).toBeDefined();
      expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
      expect(d.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    }
  });
});
