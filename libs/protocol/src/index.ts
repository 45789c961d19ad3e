export * from './errors';
export * from './parameters';
export * from './request';
export * from './own-keys';
export * from './control-chars';
