export * from './types';
export * from './schema';
export { printModelConfigProto, MODEL_CONFIG_PROTO_PATH } from './proto-text';
export * from './pbtxt';
export { modelConfigToJson, modelConfigFromJson } from './json';
export {
  fillServerSide,
  normalizeModelConfig,
  DEFAULT_MAX_SEQUENCE_IDLE_US,
  ENSEMBLE_PLATFORM,
  PLATFORM_BACKENDS,
  type NormalizeOptions,
  type ServerFillContext,
} from './normalize';
export { validateModelConfig, type ValidateOptions } from './validate';
export { checkModelName, isValidModelName, modelNameProblem, MAX_MODEL_NAME_BYTES } from './model-name';
export { checkConfigPaths, resolveInside, resolvePathParameter, MODEL_DIRECTORY_PLACEHOLDER, type ModelFolders } from './model-paths';
