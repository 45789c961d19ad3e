import 'reflect-metadata';
import { Controller, Get, Inject, Module, Res, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { PrometheusController, PrometheusModule } from '@willsoto/nestjs-prometheus';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ModelRepositoryManager } from '@nereid/core';
import { NereidMetrics, parseMetricsConfig, type ServedVersion, type StatsSource } from '@nereid/metrics';
import type { SchedulerHost } from '@nereid/scheduler';
import type { ServeOptions } from './cli-options';

const NEREID_METRICS = Symbol('NEREID_METRICS');

/**
 * `GET /metrics`: @willsoto/nestjs-prometheus's controller, reading Nereid's own prom-client
 * registry (one per server, so that servers in one process keep their own families) instead of
 * prom-client's global one.
 */
@Controller()
export class MetricsController extends PrometheusController {
  constructor(@Inject(NEREID_METRICS) private readonly metrics: NereidMetrics) {
    super();
  }

  @Get()
  override async index(@Res({ passthrough: true }) response: FastifyReply): Promise<string> {
    response.header('Content-Type', this.metrics.contentType);
    return this.metrics.expose();
  }
}

/** PrometheusModule with Nereid's registry and controller; no prom-client default (process) metrics. */
@Module({})
export class MetricsModule {
  static register(metrics: NereidMetrics): DynamicModule {
    const prometheus = PrometheusModule.register({ controller: MetricsController, path: '/metrics', defaultMetrics: { enabled: false } });
    return {
      module: MetricsModule,
      imports: [{ ...prometheus, providers: [...(prometheus.providers ?? []), { provide: NEREID_METRICS, useValue: metrics }] }],
    };
  }
}

export interface RunningMetricsEndpoint {
  port: number;
  close(): Promise<void>;
}

/** Serves the metrics port (Nest on Fastify). */
export async function startMetricsEndpoint(metrics: NereidMetrics, host: string, port: number): Promise<RunningMetricsEndpoint> {
  const app = await NestFactory.create<NestFastifyApplication>(MetricsModule.register(metrics), new FastifyAdapter({ logger: false }), {
    logger: false,
    abortOnError: false,
  });
  await app.listen(port, host);
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  const address = fastify.server.address();
  metrics.start();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: async () => {
      metrics.stop();
      fastify.server.closeAllConnections();
      await app.close();
    },
  };
}

/** What the metrics read of the models a manager serves (every READY version). */
export function statsSourceOf(manager: ModelRepositoryManager, scheduler: SchedulerHost): StatsSource {
  return {
    served: () => {
      const out: ServedVersion[] = [];
      for (const entry of manager.all()) {
        for (const v of entry.versions.values()) {
          const rt = v.runtime;
          if (v.state !== 'READY' || !rt) continue;
          out.push({ model: entry.name, version: String(v.version), key: rt.key, tags: rt.config.metric_tags ?? {}, counts: rt.stats, loadSecs: rt.loadSecs, observer: rt.stats.observer });
        }
      }
      return out.sort((a, b) => a.model.localeCompare(b.model) || Number(a.version) - Number(b.version));
    },
    pending: (key) => scheduler.pendingCount(key),
    inflight: (key) => scheduler.inflightCount(key),
    sequenceSlotsInUse: (key) => scheduler.sequenceSlotsInUse().get(key),
  };
}

/** The metrics of `nereid serve`'s options, or undefined with `--allow-metrics=false`. */
export function metricsOf(options: ServeOptions): NereidMetrics | undefined {
  if (!options.allowMetrics) return undefined;
  return new NereidMetrics({
    settings: parseMetricsConfig(options.metricsConfig),
    cpu: options.allowCpuMetrics,
    gpu: options.allowGpuMetrics,
    intervalMs: options.metricsIntervalMs,
  });
}
