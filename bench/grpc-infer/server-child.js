'use strict';
// Child process hosting one server under test; reports its gRPC port to the parent over IPC.
const path = require('node:path');

const root = path.resolve(__dirname, '../..');

async function start(mode, repository) {
  if (mode === 'baseline') return require('./baseline-server').startBaseline('127.0.0.1', 0);
  require('./ts-register');
  const { startNereid } = require(path.join(root, 'apps/nereid/src/serve.ts'));
  const nest = mode === 'nest';
  const nereid = await startNereid({
    modelRepositories: [repository],
    modelControlMode: 'explicit',
    loadModels: ['simple'],
    allowHttp: false,
    allowMetrics: false,
    allowGrpc: !nest,
    grpcAddress: '127.0.0.1',
    grpcPort: 0,
    logInfo: false,
  });
  if (!nest) return { port: nereid.grpcPort, close: () => nereid.close() };
  // Same core behind @nestjs/microservices' gRPC transport instead of grpc-js directly.
  const { startNestFront } = require('./nest-front.ts');
  const { freePort } = require('../lib/util');
  const port = await freePort();
  const front = await startNestFront(nereid.core, '127.0.0.1', port);
  return { port, close: () => front.close().then(() => nereid.close()) };
}

start(process.argv[2], process.argv[3] || path.join(root, 'models')).then(
  (server) => {
    process.send({ port: server.port });
    process.on('message', (m) => {
      if (m === 'stop') server.close().finally(() => process.exit(0));
    });
  },
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
