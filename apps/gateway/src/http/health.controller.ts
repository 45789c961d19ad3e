import { Controller, Get, Inject, Res } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import type { InferenceCore } from '@nereid/core';
import { INFERENCE_CORE } from '../tokens';

/** `/v2/health/live` and `/v2/health/ready`: 200 or 400 with an empty body, as Triton answers. */
@Controller('v2/health')
export class HealthController {
  constructor(
    @Inject(INFERENCE_CORE) private readonly core: InferenceCore,
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
  ) {}

  private indicator(key: string, ok: boolean): HealthIndicatorResult {
    const i = this.indicators.check(key);
    return ok ? i.up() : i.down();
  }

  private async answer(key: string, ok: () => boolean, reply: FastifyReply): Promise<void> {
    try {
      await this.health.check([async () => this.indicator(key, ok())]);
      void reply.status(200).send();
    } catch {
      void reply.status(400).send();
    }
  }

  @Get('live')
  live(@Res() reply: FastifyReply): Promise<void> {
    return this.answer('live', () => this.core.isLive(), reply);
  }

  @Get('ready')
  ready(@Res() reply: FastifyReply): Promise<void> {
    return this.answer('ready', () => this.core.isReady(), reply);
  }
}
