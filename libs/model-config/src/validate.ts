export { validateModelConfig, type ValidateOptions } from './validate/index';
