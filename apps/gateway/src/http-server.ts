import 'reflect-metadata';
import * as http from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { InferenceCore } from '@nereid/core';
import type { InferenceError } from '@nereid/protocol';
import { GatewayModule } from './gateway.module';
import { attachHttpAccessLog } from './access-log';
import { drainingClose } from './http/drain';
import { describe, HttpErrorFilter } from './http/http-error.filter';
import { InferFastPath, matchInferPath } from './http/infer-fast-path';
import { NOSNIFF_NAME, NOSNIFF_VALUE } from './http/nosniff';
import { BodyBudget } from './http/body-budget';
import { ConnectionBudget } from './connection-budget';
import { IdleCollector } from './http/idle-collector';
import { PipelineBound } from './http/pipelining';
import { httpGroupOf } from './api-groups';
import { ApiGuard } from './restrictions';
import { bodyWaitMs, connectionCap, DEFAULT_HTTP_LIMITS, serverOptionsFor, type HttpLimits } from './http-limits';
import type { GatewayOptions } from './tokens';

export { DEFAULT_HTTP_LIMITS, type HttpLimits } from './http-limits';

export interface HttpServerOptions extends GatewayOptions {
  host: string;
  /** 0 = any free port. */
  port: number;
  /** Connection bounds; each left out takes its default (DEFAULT_HTTP_LIMITS). */
  limits?: Partial<HttpLimits>;
}

export interface RunningHttpServer {
  port: number;
  app: NestFastifyApplication;
  /** The budget of request bodies held at once; the gRPC front door charges its messages to it too. */
  bodyBudget: BodyBudget;
  /** The budget of open connections (--http-max-connections); the gRPC port's connections count in it too. */
  connections: ConnectionBudget;
  close(): Promise<void>;
}

/**
 * Nest's Fastify adapter, with errors raised before a route handler runs (body too large,
 * aborted uploads) answered in Triton's `{"error": ...}` shape instead of Fastify's.
 */
class TritonFastifyAdapter extends FastifyAdapter {
  override setErrorHandler(handler: Parameters<FastifyAdapter['setErrorHandler']>[0]): ReturnType<FastifyAdapter['setErrorHandler']> {
    return super.setErrorHandler(function (this: unknown, error, req, reply) {
      const code = (error as { code?: string }).code ?? '';
      if (code.startsWith('FST_ERR_CTP_')) {
        const { status, message } = describe(error);
        return reply.status(status).header('content-type', 'application/json').send(JSON.stringify({ error: message }));
      }
      return handler.call(this as never, error, req, reply);
    });
  }
}

/** A refusal at the gate (restricted API, bearer token): the body is drained, the error sent as JSON. */
function refuse(req: http.IncomingMessage, res: http.ServerResponse, status: number, message: string, extra?: http.OutgoingHttpHeaders): void {
  const text = JSON.stringify({ error: message });
  req.resume();
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), [NOSNIFF_NAME]: NOSNIFF_VALUE, ...extra });
  res.end(text);
}

function headerOf(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Every body arrives as a Buffer: the infer codec parses JSON and binary sections itself. */
function rawBodies(fastify: FastifyInstance, limit: number): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: limit }, (_req, body, done) => done(null, body));
}

/** Heap and external bytes left uncollected that make a quiet server run one collection (http/idle-collector.ts). */
const IDLE_GC_THRESHOLD = 16 * 1024 * 1024;

/** Starts the HTTP front door (Nest on Fastify) over a core. */
export async function startHttpServer(core: InferenceCore, options: HttpServerOptions): Promise<RunningHttpServer> {
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
  const budget = new BodyBudget(limits.maxInflightBodyBytes, bodyWaitMs(limits));
  const fastPath = new InferFastPath(core, options.maxInputSize, options.sharedMemory, budget, options.requestLog, options.maxOutputSize);
  const guard = new ApiGuard(options.restrictedApis);
  const tokens = options.authTokens;
  let nestHandler: http.RequestListener | undefined;
  // POST .../infer takes the lean path; everything else goes through Nest's router.
  const route = (req: http.IncomingMessage, res: http.ServerResponse, refused?: InferenceError): void => {
    if (refused) return refuse(req, res, describe(refused).status, refused.message);
    if (req.method === 'POST') {
      const target = matchInferPath(req.url ?? '');
      if (target) {
        // The fast path writes the nosniff header in its own writeHead calls.
        fastPath.handle(req, res, target[0], target[1]);
        return;
      }
    }
    res.setHeader(NOSNIFF_NAME, NOSNIFF_VALUE);
    nestHandler!(req, res);
  };
  const dispatch = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    // The one gate of --http-restricted-api, before both the fast path and Nest's routes.
    if (guard.active || tokens) {
      const group = httpGroupOf(req.url ?? '');
      const missing = guard.missingHeader(group, (h) => headerOf(req, h));
      // Triton's answer to a restricted API called without its header.
      if (missing !== undefined) return refuse(req, res, 403, `This API is restricted, expecting header '${missing}'`);
      // A bearer-token refusal: 401 without a valid token, 403 when the token does not open the group.
      const verdict = tokens?.check(group, headerOf(req, 'authorization'));
      if (verdict === 'unauthenticated') {
        return refuse(req, res, 401, 'This API requires a valid bearer token', { 'www-authenticate': 'Bearer' });
      }
      if (verdict === 'forbidden') return refuse(req, res, 403, 'This token does not open this API');
    }
    // A body is read only once the budget of bodies held at once has room for it.
    budget.admit(req, res, route);
  };
  // Every request passes the pipelining bound first: a client that does not read stalls only itself.
  const pipeline = new PipelineBound(dispatch, limits.maxUnansweredPerConnection);
  const adapter = new TritonFastifyAdapter({
    bodyLimit: options.maxInputSize,
    logger: false,
    // While closing, requests on open keep-alive connections are answered (drainingClose), not 503.
    return503OnClosing: false,
    routerOptions: { maxParamLength: 1000 },
    // A malformed request is answered after the pipelined requests before it.
    clientErrorHandler: pipeline.clientError,
    serverFactory: (handler: http.RequestListener) => {
      nestHandler = handler;
      return http.createServer(serverOptionsFor(limits), pipeline.admit);
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(GatewayModule.register(core, options), adapter, {
    logger: false,
    abortOnError: false,
    bodyParser: false,
  });
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  rawBodies(fastify, options.maxInputSize);
  if (options.requestLog?.access) attachHttpAccessLog(fastify.server, options.requestLog);
  const connections = new ConnectionBudget(connectionCap(limits.maxConnections));
  connections.guard(fastify.server);
  app.useGlobalFilters(new HttpErrorFilter());
  await app.init();
  await app.listen(options.port, options.host);
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  // After a burst of bodies (an attack, a flood of large tensors) their garbage is collected once
  // the server is quiet again, instead of staying allocated until the next heap pressure.
  const collector = new IdleCollector({ thresholdBytes: IDLE_GC_THRESHOLD, intervalMs: 1000 }).start();
  const close = drainingClose(fastify.server, () => {
    collector.stop();
    return app.close();
  });
  return { port, app, bodyBudget: budget, connections, close };
}
