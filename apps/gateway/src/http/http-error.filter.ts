import { ArgumentsHost, Catch, HttpException, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { capMessage, httpStatusOf, InferenceError } from '@nereid/protocol';
import { isWrongMethod } from './routes';

/** Turns any error into Triton's `{"error": "..."}` body with Triton's status. */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    let { status, message } = describe(exception);
    if (status === 404 && exception instanceof HttpException) {
      const req = http.getRequest<FastifyRequest>();
      if (isWrongMethod(req.method, req.url)) {
        status = 405;
        message = 'Method Not Allowed';
      }
    }
    void reply.status(status).header('content-type', 'application/json').send(JSON.stringify({ error: message }));
  }
}

/** Status and message of any error as an HTTP answer; the message capped as InferenceError's are. */
export function describe(exception: unknown): { status: number; message: string } {
  const { status, message } = describeUncapped(exception);
  return { status, message: capMessage(message) };
}

function describeUncapped(exception: unknown): { status: number; message: string } {
  if (exception instanceof InferenceError) return { status: httpStatusOf(exception.code), message: exception.message };
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status === 404) return { status, message: 'Not Found' };
    if (status === 405) return { status, message: 'Method Not Allowed' };
    return { status, message: exception.message };
  }
  const e = exception as { code?: string; statusCode?: number; message?: string };
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { status: 400, message: 'Request body size exceeds the maximum allowed value. Use --http-max-input-size to increase the limit.' };
  }
  if (e?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return { status: 400, message: e.message ?? 'invalid request body' };
  }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: 400, message: e.message ?? 'bad request' };
  }
  return { status: 500, message: e?.message ?? String(exception) };
}
