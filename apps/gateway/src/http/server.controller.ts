import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import type { InferenceCore, LoadOptions, LogSettings } from '@nereid/core';
import { InferenceError } from '@nereid/protocol';
import { INFERENCE_CORE } from '../tokens';
import { parseJsonBody } from './body';

/**
 * Load request `parameters` → LoadOptions: `config` (ModelConfig JSON text) and `file:<version>/<path>`
 * (base64 content, kept under the parameter name as sent). Triton reads every value as a string
 * before looking at its key; a value of another type is the client's mistake (400, where Triton's
 * JSON reader answers 500). Any other key is refused as Triton does (500).
 */
function loadOptions(body: Record<string, unknown> | undefined): LoadOptions {
  const params = body?.parameters;
  if (params === undefined || params === null) return {};
  if (typeof params !== 'object' || Array.isArray(params)) {
    throw InferenceError.invalidArg("'parameters' must be a JSON object");
  }
  const options: LoadOptions = {};
  for (const [k, v] of Object.entries(params as Record<string, unknown>)) {
    if (typeof v !== 'string') throw InferenceError.invalidArg(`invalid value type for load parameter '${k}', expected a string.`);
    if (k === 'config') options.config = v;
    else if (k.startsWith('file:')) (options.files ??= new Map()).set(k, Buffer.from(v, 'base64'));
    else throw InferenceError.internal('unexpected error on creating Triton parameter');
  }
  return options;
}

/** `/v2` server metadata and Triton's extensions: repository, logging, trace, shared memory. */
@Controller('v2')
export class ServerController {
  constructor(@Inject(INFERENCE_CORE) private readonly core: InferenceCore) {}

  @Get()
  metadata(): unknown {
    return this.core.serverMetadata();
  }

  @Post('repository/index')
  @HttpCode(200)
  index(@Body() body: unknown): Promise<unknown> {
    return this.repoIndex(body);
  }

  @Post('repository/:repo/index')
  @HttpCode(200)
  namedIndex(@Body() body: unknown): Promise<unknown> {
    return this.repoIndex(body);
  }

  private async repoIndex(body: unknown): Promise<unknown> {
    const json = parseJsonBody(body);
    const ready = json?.ready ?? false;
    if (typeof ready !== 'boolean') throw InferenceError.invalidArg("Invalid value for 'ready': expected a boolean");
    return this.core.repositoryIndex(ready);
  }

  @Post('repository/models/:model/load')
  @HttpCode(200)
  async load(@Param('model') model: string, @Body() body: unknown): Promise<void> {
    await this.core.loadModel(model, loadOptions(parseJsonBody(body)));
  }

  @Post('repository/models/:model/unload')
  @HttpCode(200)
  async unload(@Param('model') model: string, @Body() body: unknown): Promise<void> {
    const params = parseJsonBody(body)?.parameters as Record<string, unknown> | undefined;
    const dependents = params?.unload_dependents ?? false;
    if (typeof dependents !== 'boolean') throw InferenceError.invalidArg("'unload_dependents' must be a boolean");
    await this.core.unloadModel(model, dependents);
  }

  @Post('repository/:repo/models/:model/load')
  @HttpCode(200)
  async namedLoad(@Param('repo') repo: string, @Param('model') model: string, @Body() body: unknown): Promise<void> {
    if (repo) throw InferenceError.unsupported("'repository_name' specification is not supported");
    await this.load(model, body);
  }

  @Post('repository/:repo/models/:model/unload')
  @HttpCode(200)
  async namedUnload(@Param('repo') repo: string, @Param('model') model: string, @Body() body: unknown): Promise<void> {
    if (repo) throw InferenceError.unsupported("'repository_name' specification is not supported");
    await this.unload(model, body);
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
