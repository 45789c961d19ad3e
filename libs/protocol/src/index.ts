export * from './errors';
export * from './parameters';
export * from './request';
