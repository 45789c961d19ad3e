export * from './remote-channels';
export * from './cluster-backends';
export * from './cluster-watch';
