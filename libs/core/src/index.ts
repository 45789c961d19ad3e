export * from './core';
export * from './config-pipeline';
export * from './model-manager';
export * from './nereid-core';
export * from './request-validation';
export * from './statistics';
