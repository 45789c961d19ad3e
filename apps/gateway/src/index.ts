export * from './gateway.module';
export * from './http-server';
export * from './tokens';
export * from './access-log';
export { startGrpcServer, type GrpcServerOptions, type GrpcServerHandle } from './grpc';
export * from './api-groups';
export { ApiGuard, checkRestrictions, parseRestriction, type Restriction } from './restrictions';
export { parseTokensFile, TokenStore, type TokenVerdict } from './auth-tokens';
export * from './distributed';
