import { ENSEMBLE_PLATFORM, PLATFORM_BACKENDS } from '../server-fill';
import type { ModelConfig } from '../types';
import { invalid } from './common';

const BACKENDS_WITH_PLATFORMS = new Set(Object.values(PLATFORM_BACKENDS));

/** platform/backend presence, pairing (§1) and that the backend is one this server has. */
export function validatePlatformBackend(config: ModelConfig, knownBackends: string[]): void {
  const model = config.name ?? '';
  const platform = config.platform ?? '';
  const backend = config.backend ?? '';
  if (!platform && !backend) invalid(`must specify 'platform' or 'backend' for '${model}'`);
  const pairError = `unexpected 'platform' and 'backend' pair, got:${platform}, ${backend}`;
  if (platform === ENSEMBLE_PLATFORM) {
    if (backend) invalid(pairError);
    return;
  }
  const platformBackend = PLATFORM_BACKENDS[platform];
  if (platform && backend && (platformBackend !== undefined || BACKENDS_WITH_PLATFORMS.has(backend)) && platformBackend !== backend) {
    invalid(pairError);
  }
  const effective = backend || platformBackend;
  if (!effective) invalid(`unexpected platform type '${platform}' for ${model}`);
  if (!knownBackends.includes(effective)) {
    invalid(`unknown backend '${effective}' for model '${model}'; this server has backends: ${knownBackends.join(', ') || '(none)'}`);
  }
}
