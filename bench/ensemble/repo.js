'use strict';
// bench/ensemble's model repository: add_sub and mul (python models) and the add_sub_mul ensemble
// of the two, copied into a fresh temporary folder; and a server on it with one connection.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, startNereid } = require('../lib/util');
const { RawConnection } = require('../sequence-batching/raw-client');

/** A fresh folder under the system's temporary one, named `prefix`…, holding the three models of `root`'s checkout. */
function ensembleRepo(prefix, root = ROOT) {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.cpSync(path.join(root, 'models/add_sub'), path.join(repo, 'add_sub'), { recursive: true });
  fs.cpSync(path.join(root, 'models/mul'), path.join(repo, 'mul'), { recursive: true });
  fs.cpSync(path.join(root, 'test/fixtures/python/add_sub_mul'), path.join(repo, 'add_sub_mul'), { recursive: true });
  return repo;
}

/**
 * A server (dist/) on a fresh ensembleRepo(`prefix`) and one keep-alive connection to it, as a
 * client would use; close() ends the connection and the server and removes the folder.
 */
async function ensembleServer(prefix) {
  const repo = ensembleRepo(prefix);
  const server = await startNereid(repo);
  const conn = new RawConnection(server.http);
  const close = async () => {
    conn.close();
    await server.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  };
  return { server, conn, close };
}

module.exports = { ensembleRepo, ensembleServer };
