import { hideServerPaths } from './server-paths';

describe('server paths in messages', () => {
  const cache = '/tmp/nereid-s3-Xy12/repository';

  it('show a cloud cache folder as its repository URL', () => {
    const message = `failed to load 'm': ${cache}/m/config.pbtxt:3:1: expected a field name`;
    expect(hideServerPaths(message, [{ local: cache, shown: 's3://127.0.0.1:9000/models/repo' }])).toBe(
      "failed to load 'm': s3://127.0.0.1:9000/models/repo/m/config.pbtxt:3:1: expected a field name",
    );
    expect(hideServerPaths(`failed to read model repository '${cache}'`, [{ local: cache, shown: 's3://b/p/' }])).toBe(
      "failed to read model repository 's3://b/p'",
    );
  });

  it('show an override folder as nothing, each folder as itself when one lies in another', () => {
    const root = '/tmp/nereid-override-ab12';
    const paths = [
      { local: '/tmp/nereid-s3-Xy12', shown: 's3://outer' },
      { local: root, shown: '' },
      { local: cache, shown: 'gs://b/r' },
    ];
    expect(hideServerPaths(`open ${root}/m/1/model.onnx; read ${cache}/m/1/x and ${root}`, paths)).toBe('open m/1/model.onnx; read gs://b/r/m/1/x and ');
    expect(hideServerPaths('nothing to hide', paths)).toBe('nothing to hide');
  });
});
