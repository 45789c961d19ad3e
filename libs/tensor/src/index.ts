export * from './datatype';
export * from './tensor';
export * from './typed';
export * from './float16';
export * from './json-codec';
export * from './binary-codec';
export * from './grpc-contents';
export * from './classification';
