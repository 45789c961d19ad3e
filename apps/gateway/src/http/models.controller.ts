import { Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InferenceCore } from '@nereid/core';
import { modelConfigToJson } from '@nereid/model-config';
import { InferenceError, toInferenceError, type InferenceResponse } from '@nereid/protocol';
import { GATEWAY_OPTIONS, INFERENCE_CORE, type GatewayOptions } from '../tokens';
import { compress, decodeBody, HeaderedError, parseVersion, pickEncoding } from './body';
import { describe } from './http-error.filter';
import { decodeInferRequest, encodeInferResponse, type RawInputInfo } from './infer-codec';

function sendJson(reply: FastifyReply, status: number, body: unknown): void {
  void reply.status(status).header('content-type', 'application/json').send(JSON.stringify(body));
}

/** `/v2/models/...`: metadata, readiness, config, statistics and inference. */
@Controller('v2/models')
export class ModelsController {
  constructor(
    @Inject(INFERENCE_CORE) private readonly core: InferenceCore,
    @Inject(GATEWAY_OPTIONS) private readonly options: GatewayOptions,
  ) {}

  @Get('stats')
  allStats(): unknown {
    return { model_stats: this.core.statistics('', -1) };
  }

  @Get(':model')
  metadata(@Param('model') model: string): unknown {
    return this.core.modelMetadata(model, -1);
  }

  @Get(':model/versions/:version')
  versionMetadata(@Param('model') model: string, @Param('version') version: string): unknown {
    return this.core.modelMetadata(model, parseVersion(version));
  }

  @Get(':model/ready')
  ready(@Param('model') model: string, @Res() reply: FastifyReply): void {
    this.answerReady(model, -1, reply);
  }

  @Get(':model/versions/:version/ready')
  versionReady(@Param('model') model: string, @Param('version') version: string, @Res() reply: FastifyReply): void {
    this.answerReady(model, parseVersion(version), reply);
  }

  private answerReady(model: string, version: number, reply: FastifyReply): void {
    let ready = false;
    try {
      ready = this.core.isModelReady(model, version);
    } catch {
      ready = false;
    }
    if (ready) void reply.status(200).send();
    else sendJson(reply, 400, { error: 'Model version not ready' });
  }

  @Get(':model/config')
  config(@Param('model') model: string): unknown {
    return modelConfigToJson(this.core.modelConfig(model, -1));
  }

  @Get(':model/versions/:version/config')
  versionConfig(@Param('model') model: string, @Param('version') version: string): unknown {
    return modelConfigToJson(this.core.modelConfig(model, parseVersion(version)));
  }

  @Get(':model/stats')
  stats(@Param('model') model: string): unknown {
    return { model_stats: this.core.statistics(model, -1) };
  }

  @Get(':model/versions/:version/stats')
  versionStats(@Param('model') model: string, @Param('version') version: string): unknown {
    return { model_stats: this.core.statistics(model, parseVersion(version)) };
  }

  @Post(':model/infer')
  @HttpCode(200)
  infer(@Param('model') model: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    void this.runInfer(model, -1, req, reply);
  }

  @Post(':model/versions/:version/infer')
  @HttpCode(200)
  inferVersion(
    @Param('model') model: string,
    @Param('version') version: string,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): void {
    let v: number;
    try {
      v = parseVersion(version);
    } catch (e) {
      this.fail(reply, e);
      return;
    }
    void this.runInfer(model, v, req, reply);
  }

  private fail(reply: FastifyReply, e: unknown): void {
    const { status, message } = describe(e);
    if (e instanceof HeaderedError) for (const [k, v] of Object.entries(e.headers)) void reply.header(k, v);
    sendJson(reply, status, { error: message });
  }

  private rawInput(model: string, version: number): RawInputInfo | undefined {
    const md = this.core.modelMetadata(model, version);
    if (md.inputs.length !== 1) return undefined;
    return md.inputs[0];
  }

  private async runInfer(model: string, version: number, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      const raw = (req.body as Buffer | undefined) ?? Buffer.alloc(0);
      const body = await decodeBody(raw, req.headers['content-encoding'] as string | undefined, this.options.maxInputSize);
      if (this.core.isDecoupled(model, version)) {
        throw InferenceError.unsupported("HTTP end point doesn't support models with decoupled transaction policy");
      }
      const header = req.headers['inference-header-content-length'] as string | undefined;
      const { request, form } = decodeInferRequest(body, header, model, version, () => this.rawInput(model, version));
      const controller = new AbortController();
      request.signal = controller.signal;
      req.raw.once('close', () => {
        if (!reply.sent) controller.abort();
      });
      const response: InferenceResponse = await this.core.inferOne(request);
      const encoded = encodeInferResponse(response, form);
      let out = encoded.body;
      const encoding = pickEncoding(req.headers['accept-encoding'] as string | undefined);
      if (encoding) {
        out = await compress(out, encoding);
        void reply.header('content-encoding', encoding);
      }
      if (encoded.headerLength !== undefined) {
        void reply
          .header('content-type', 'application/octet-stream')
          .header('inference-header-content-length', String(encoded.headerLength));
      } else {
        void reply.header('content-type', 'application/json');
      }
      void reply.status(200).send(out);
    } catch (e) {
      this.fail(reply, toInferenceErrorKeepingHeaders(e));
    }
  }
}

function toInferenceErrorKeepingHeaders(e: unknown): unknown {
  return e instanceof HeaderedError ? e : toInferenceError(e);
}
