#!/usr/bin/env node
import 'reflect-metadata';
import { parseServeArgs, usage, UsageError } from './cli-parser';

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(usage() + '\n');
    process.exit(command ? 0 : 2);
  }
  if (command !== 'serve') {
    process.stderr.write(`nereid: unknown command '${command}'. Try 'nereid serve --help'.\n`);
    process.exit(2);
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(usage() + '\n');
    process.exit(0);
  }
  let options;
  try {
    options = parseServeArgs(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`nereid: ${e.message}\nTry 'nereid serve --help'.\n`);
      process.exit(2);
    }
    throw e;
  }
  let server;
  try {
    // Loaded only when needed: a distributed role process (roles.ts) must not load what it does not run.
    server = options.roles.length > 0 ? await (await import('./roles')).startRoles(options) : await (await import('./serve')).startNereid(options);
  } catch (e) {
    process.stderr.write(`error: creating server: ${(e as Error).message}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) process.exit(1);
    stopping = true;
    process.stderr.write(`nereid: ${signal} received, draining (up to ${options.exitTimeoutSecs}s)\n`);
    // As Triton: an error line and exit code 1 when in-flight work outlives the exit timeout.
    const timer = setTimeout(() => {
      process.stderr.write('nereid: failed to stop server: Exit timeout expired. Exiting immediately.\n');
      process.exit(1);
    }, options.exitTimeoutSecs * 1000);
    timer.unref();
    void server.close().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

void main(process.argv.slice(2));
