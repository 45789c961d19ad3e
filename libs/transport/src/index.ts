export * from './channels';
export * from './in-memory';
