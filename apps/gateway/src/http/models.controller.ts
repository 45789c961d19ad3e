import { Controller, Get, Inject, Param, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { InferenceCore } from '@nereid/core';
import { modelConfigToJson } from '@nereid/model-config';
import { INFERENCE_CORE } from '../tokens';
import { parseVersion } from './body';

function sendJson(reply: FastifyReply, status: number, body: unknown): void {
  void reply.status(status).header('content-type', 'application/json').send(JSON.stringify(body));
}

/** `/v2/models/...`: metadata, readiness, config, statistics (inference: infer-fast-path.ts). */
@Controller('v2/models')
export class ModelsController {
  constructor(@Inject(INFERENCE_CORE) private readonly core: InferenceCore) {}

  @Get('stats')
  async allStats(): Promise<unknown> {
    return { model_stats: await this.core.statistics('', -1) };
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
  async stats(@Param('model') model: string): Promise<unknown> {
    return { model_stats: await this.core.statistics(model, -1) };
  }

  @Get(':model/versions/:version/stats')
  async versionStats(@Param('model') model: string, @Param('version') version: string): Promise<unknown> {
    return { model_stats: await this.core.statistics(model, parseVersion(version)) };
  }
}
