export * from './remote-channels';
export * from './cluster-backends';
export * from './cluster-watch';
export * from './cluster-members';
export * from './cluster-control';
export * from './cluster-core';
export * from './cluster-sums';
