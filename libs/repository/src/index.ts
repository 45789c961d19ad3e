export * from './local-repository';
export * from './versions';
export * from './remote';
