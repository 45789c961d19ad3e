import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { checkJsonLoadValues, HTTP_REPOSITORY_WORDS, parametersFromJson, RepositoryApi, type InferenceCore, type LogSettings } from '@nereid/core';
import { INFERENCE_CORE } from '../tokens';
import { parseJsonBody } from './body';

/** `/v2` server metadata and Triton's extensions: repository, logging, trace, shared memory. */
@Controller('v2')
export class ServerController {
  /** The repository extension, in HTTP's words (libs/core/src/repository-api.ts). */
  private readonly repository: RepositoryApi;

  constructor(@Inject(INFERENCE_CORE) private readonly core: InferenceCore) {
    this.repository = new RepositoryApi(core, HTTP_REPOSITORY_WORDS);
  }

  @Get()
  metadata(): unknown {
    return this.core.serverMetadata();
  }

  @Post('repository/index')
  @HttpCode(200)
  index(@Body() body: unknown): Promise<unknown> {
    return this.repository.index({ repository: '', ready: parseJsonBody(body)?.ready });
  }

  @Post('repository/:repo/index')
  @HttpCode(200)
  namedIndex(@Param('repo') repo: string, @Body() body: unknown): Promise<unknown> {
    return this.repository.index({ repository: repo, ready: parseJsonBody(body)?.ready });
  }

  @Post('repository/models/:model/load')
  @HttpCode(200)
  load(@Param('model') model: string, @Body() body: unknown): Promise<void> {
    return this.namedLoad('', model, body);
  }

  @Post('repository/models/:model/unload')
  @HttpCode(200)
  unload(@Param('model') model: string, @Body() body: unknown): Promise<void> {
    return this.namedUnload('', model, body);
  }

  @Post('repository/:repo/models/:model/load')
  @HttpCode(200)
  async namedLoad(@Param('repo') repo: string, @Param('model') model: string, @Body() body: unknown): Promise<void> {
    const params = parseJsonBody(body)?.parameters;
    checkJsonLoadValues(params, HTTP_REPOSITORY_WORDS);
    await this.repository.load({ repository: repo, model, parameters: parametersFromJson(params) });
  }

  @Post('repository/:repo/models/:model/unload')
  @HttpCode(200)
  async namedUnload(@Param('repo') repo: string, @Param('model') model: string, @Body() body: unknown): Promise<void> {
    const params = parseJsonBody(body)?.parameters;
    await this.repository.unload({ repository: repo, model, parameters: parametersFromJson(params) });
  }

  @Get('logging')
  logging(): LogSettings {
    return this.core.logSettings();
  }

  @Post('logging')
  @HttpCode(200)
  updateLogging(@Body() body: unknown): LogSettings {
    return this.core.logSettings((parseJsonBody(body) ?? {}) as Partial<LogSettings>);
  }

  @Get('trace/setting')
  trace(): unknown {
    return this.core.traceSettings('');
  }

  @Post('trace/setting')
  @HttpCode(200)
  updateTrace(@Body() body: unknown): unknown {
    return this.core.traceSettings('', parseJsonBody(body) ?? {});
  }

  @Get('models/:model/trace/setting')
  modelTrace(@Param('model') model: string): unknown {
    return this.core.traceSettings(model);
  }

  @Post('models/:model/trace/setting')
  @HttpCode(200)
  updateModelTrace(@Param('model') model: string, @Body() body: unknown): unknown {
    return this.core.traceSettings(model, parseJsonBody(body) ?? {});
  }
}
