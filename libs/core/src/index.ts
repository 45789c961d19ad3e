export * from './core';
export * from './config-pipeline';
export * from './model-manager';
export * from './nereid-core';
export * from './repository-api';
export * from './repository-api-words';
export * from './request-validation';
export * from './statistics';
