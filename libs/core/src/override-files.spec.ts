import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { hideOverrideFolder, overrideFilePath, removeOverrideFolder, writeOverrideFolder } from './override-files';

const bytes = (s: string) => new Uint8Array(Buffer.from(s));
const overrideFolders = () => readdirSync(tmpdir()).filter((n) => n.startsWith('nereid-override-'));

describe('file override names', () => {
  it('are relative paths of files inside the model folder', () => {
    expect(overrideFilePath('file:1/model.onnx')).toEqual(['1', 'model.onnx']);
    expect(overrideFilePath('file:labels.txt')).toEqual(['labels.txt']);
    expect(overrideFilePath('file:1/sub/weights.bin')).toEqual(['1', 'sub', 'weights.bin']);
  });

  it("refuses traversal and absolute paths with Triton's words", () => {
    for (const key of ['file:../x', 'file:1/../../x', 'file:/etc/passwd', 'file:..']) {
      expect(() => overrideFilePath(key)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARG', message: `Invalid file parameter '${key}' must stay within model directory.` }),
      );
    }
  });

  it('refuses names that do not name a file', () => {
    for (const key of ['file:', 'file:1/', 'file:1//a', 'file:./a', 'file:1/a\nb']) {
      expect(() => overrideFilePath(key)).toThrow(
        expect.objectContaining({
          code: 'INVALID_ARG',
          message: `Invalid file parameter '${key}' must name a file of the model directory: 'file:<version>/<path>'`,
        }),
      );
    }
  });
});

describe('override folders', () => {
  it('hold the files under <tmp>/nereid-override-*/<model>/ and are removed whole', async () => {
    const location = await writeOverrideFolder('m', new Map([['file:1/model.onnx', bytes('onnx')], ['file:labels.txt', bytes('a\nb')]]));
    expect(path.dirname(location.repository)).toBe(tmpdir());
    expect(path.basename(location.repository)).toMatch(/^nereid-override-/);
    expect(location).toMatchObject({ name: 'm', path: path.join(location.repository, 'm') });
    expect(readFileSync(path.join(location.path, '1', 'model.onnx'), 'utf8')).toBe('onnx');
    expect(readFileSync(path.join(location.path, 'labels.txt'), 'utf8')).toBe('a\nb');
    await removeOverrideFolder(location.repository);
    expect(existsSync(location.repository)).toBe(false);
  });

  it('leave nothing behind when a file cannot be written', async () => {
    // A model name of its own: other test files may load overrides at the same time.
    const name = `cleanup-${process.pid}-${Date.now()}`;
    const leftovers = () => overrideFolders().filter((dir) => existsSync(path.join(tmpdir(), dir, name)));
    const files = new Map([['file:1', bytes('a file')], ['file:1/model.onnx', bytes('onnx')]]);
    await expect(writeOverrideFolder(name, files)).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: "Invalid file parameter 'file:1/model.onnx', directory has been created as a file",
    });
    // Names longer than the file system takes: Triton's poll failure, the reason in the log only.
    const logged: string[] = [];
    for (const tooLong of [`file:${'A'.repeat(256)}`, `file:1/${Array.from({ length: 20 }, () => 'x'.repeat(250)).join('/')}`]) {
      const err = await writeOverrideFolder(name, new Map([['file:1/a', bytes('a')], [tooLong, bytes('x')]]), (m) => logged.push(m)).catch((e: Error) => e);
      expect(err).toMatchObject({ code: 'INTERNAL', message: `failed to load '${name}', failed to poll from model repository` });
    }
    expect(logged).toHaveLength(2);
    expect(logged.join('\n')).not.toContain(tmpdir());
    expect(leftovers()).toEqual([]);
  });

  it('are removed only when they are override folders', async () => {
    const location = await writeOverrideFolder('m', new Map([['file:1/a', bytes('a')]]));
    await removeOverrideFolder(location.path);
    expect(existsSync(location.path)).toBe(true);
    await removeOverrideFolder(location.repository);
  });

  it('never show in messages', () => {
    const root = path.join(tmpdir(), 'nereid-override-abc123');
    expect(hideOverrideFolder(`Load model from ${root}/m/1/model.onnx failed`, root)).toBe('Load model from m/1/model.onnx failed');
  });
});
