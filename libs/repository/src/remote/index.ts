export * from './cloud-credentials';
export * from './cache-sync';
export * from './remote-repositories';
export * from './remote-store';
export * from './remote-url';
