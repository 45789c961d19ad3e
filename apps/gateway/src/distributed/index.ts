export * from './remote-channels';
export * from './cluster-backends';
