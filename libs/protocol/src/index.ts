export * from './errors';
export * from './parameters';
export * from './request';
export * from './echo';
export * from './request-errors';
export * from './own-keys';
export * from './control-chars';
export * from './shared-memory-errors';
