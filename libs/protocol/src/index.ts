export * from './errors';
export * from './request';
