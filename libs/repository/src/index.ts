export * from './local-repository';
export * from './versions';
