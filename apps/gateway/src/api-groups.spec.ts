import 'reflect-metadata';
import { PATH_METADATA } from '@nestjs/common/constants';
import { API_GROUPS, API_TABLE, grpcGroupOf, httpGroupOf } from './api-groups';
import { loadServices } from './grpc/proto-loader';
import { HealthController } from './http/health.controller';
import { ModelsController } from './http/models.controller';
import { ServerController } from './http/server.controller';
import { SharedMemoryController } from './http/shared-memory.controller';

/** Every path Nest serves, with each `:param` filled in (`:version` with a number). */
function nestPaths(): string[] {
  const out: string[] = [];
  for (const controller of [HealthController, ModelsController, ServerController, SharedMemoryController]) {
    const base = [Reflect.getMetadata(PATH_METADATA, controller)].flat() as string[];
    const proto = controller.prototype as unknown as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || typeof proto[name] !== 'function') continue;
      const paths = Reflect.getMetadata(PATH_METADATA, proto[name] as object) as string | string[] | undefined;
      if (paths === undefined) continue;
      for (const b of base) {
        for (const p of [paths].flat()) {
          out.push(`/${b}/${p}`.replace(/\/+$/, '').replace(/:version/g, '3').replace(/:[a-z]+/g, 'm'));
        }
      }
    }
  }
  return out;
}

describe('API group table', () => {
  it('puts every Nest route and the infer fast path in a group', () => {
    const paths = [...nestPaths(), '/v2/models/m/infer', '/v2/models/m/versions/2/infer'];
    expect(paths.length).toBeGreaterThan(25);
    expect(paths.filter((p) => httpGroupOf(p) === undefined)).toEqual([]);
  });

  it('puts every gRPC method of both services in a group', () => {
    const services = loadServices();
    const methods = [services.inference, services.health].flatMap((s) => Object.values(s).map((m) => m.path));
    expect(methods.length).toBe(22);
    expect(methods.filter((m) => grpcGroupOf(m) === undefined)).toEqual([]);
  });

  it('names only methods and groups that exist', () => {
    const services = loadServices();
    const known = new Set([services.inference, services.health].flatMap((s) => Object.values(s).map((m) => m.path.slice(1))));
    for (const g of API_GROUPS) expect(API_TABLE[g].grpc.filter((m) => !known.has(m))).toEqual([]);
  });

  it.each([
    ['/v2', 'metadata'],
    ['/v2/', 'metadata'],
    ['/v2/health/ready', 'health'],
    ['/v2/models/m/versions/1/ready', 'health'],
    ['/v2/models/m', 'metadata'],
    ['/v2/models/m/versions/1', 'metadata'],
    ['/v2/models/m/infer?x=1', 'inference'],
    ['/v2/models/m/generate_stream', 'inference'],
    ['/v2/models/m/config', 'model-config'],
    ['/v2/models/stats', 'statistics'],
    ['/v2/models/m/versions/1/stats', 'statistics'],
    ['/v2/repository/models/m/load', 'model-repository'],
    ['/v2/repository/r/index', 'model-repository'],
    ['/v2/cudasharedmemory/region/r/unregister', 'shared-memory'],
    ['/v2/models/m/trace/setting', 'trace'],
    ['/v2/logging', 'logging'],
  ])('%s is %s', (path, group) => {
    expect(httpGroupOf(path)).toBe(group);
  });

  it('decodes each path segment as the router does, keeping an encoded slash inside its segment', () => {
    expect(httpGroupOf('/v2/%6Cogging')).toBe('logging');
    expect(httpGroupOf('/v2/models/m/%63onfig')).toBe('model-config');
    expect(httpGroupOf('/v2/models/a%2Fconfig')).toBe('metadata');
    expect(httpGroupOf('/v2/models/%E0%A4%A/config')).toBe('model-config');
  });

  it('reads the path of an absolute-form target', () => {
    expect(httpGroupOf('http://127.0.0.1:8000/v2/logging')).toBe('logging');
    expect(httpGroupOf('HTTPS://h/v2/models/m/config?x=/v2')).toBe('model-config');
    expect(httpGroupOf('/v2/logging#/v2/health/live')).toBe('logging');
  });

  it('leaves paths that are no route without a group', () => {

    expect(httpGroupOf('/v3/health/live')).toBeUndefined();
    expect(httpGroupOf('/v2/health/live/')).toBeUndefined();
    expect(grpcGroupOf('/inference.GRPCInferenceService/Unknown')).toBeUndefined();
  });
});
