import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { InferenceCore } from '@nereid/core';
import { GatewayModule } from './gateway.module';
import { describe, HttpErrorFilter } from './http/http-error.filter';
import type { GatewayOptions } from './tokens';

export interface HttpServerOptions extends GatewayOptions {
  host: string;
  /** 0 = any free port. */
  port: number;
}

export interface RunningHttpServer {
  port: number;
  app: NestFastifyApplication;
  close(): Promise<void>;
}

/** Every body arrives as a Buffer: the infer codec parses JSON and binary sections itself. */
function rawBodies(fastify: FastifyInstance, limit: number): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: limit }, (_req, body, done) => done(null, body));
}

/** Starts the HTTP front door (Nest on Fastify) over a core. */
export async function startHttpServer(core: InferenceCore, options: HttpServerOptions): Promise<RunningHttpServer> {
  const adapter = new FastifyAdapter({ bodyLimit: options.maxInputSize, logger: false, maxParamLength: 1000 });
  const app = await NestFactory.create<NestFastifyApplication>(GatewayModule.register(core, options), adapter, {
    logger: false,
    abortOnError: false,
    bodyParser: false,
  });
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  rawBodies(fastify, options.maxInputSize);
  app.useGlobalFilters(new HttpErrorFilter());
  await app.init();
  // Errors raised before a route handler runs (body too large, aborted uploads) get Triton's JSON too.
  fastify.setErrorHandler((error, _req, reply) => {
    const { status, message } = describe(error);
    void reply.status(status).header('content-type', 'application/json').send(JSON.stringify({ error: message }));
  });
  await app.listen(options.port, options.host);
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return { port, app, close: () => app.close() };
}
