export * from './ensemble-backend';
export * from './ensemble-instance';
