export * from './datatype';
export * from './tensor';
