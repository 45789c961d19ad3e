import { objectKeyProblem } from './cache-sync';
import { scrubSecrets } from './remote-store';
import { isRemoteRepository, parseRemoteRepository } from './remote-url';

describe('cloud repository paths', () => {
  it('tells cloud paths from local ones', () => {
    expect(isRemoteRepository('s3://b/p')).toBe(true);
    expect(isRemoteRepository('gs://b')).toBe(true);
    expect(isRemoteRepository('as://a/c')).toBe(true);
    expect(isRemoteRepository('/models')).toBe(false);
    expect(isRemoteRepository('./s3://x')).toBe(false);
  });

  it("parses Triton's S3 forms, with and without an endpoint", () => {
    expect(parseRemoteRepository('s3://bucket/path/to/repo')).toEqual({ kind: 's3', url: 's3://bucket/path/to/repo', bucket: 'bucket', prefix: 'path/to/repo/' });
    expect(parseRemoteRepository('s3://bucket')).toMatchObject({ bucket: 'bucket', prefix: '' });
    expect(parseRemoteRepository('s3://bucket/')).toMatchObject({ bucket: 'bucket', prefix: '' });
    expect(parseRemoteRepository('s3://localhost:9000/bucket/repo')).toMatchObject({
      bucket: 'bucket', prefix: 'repo/', endpoint: 'http://localhost:9000',
    });
    expect(parseRemoteRepository('s3://https://s3.example.com:443/b/r/')).toMatchObject({
      bucket: 'b', prefix: 'r/', endpoint: 'https://s3.example.com:443',
    });
    expect(parseRemoteRepository('s3://http://10.0.0.1:80/b')).toMatchObject({ bucket: 'b', prefix: '', endpoint: 'http://10.0.0.1:80' });
  });

  it('parses GCS and Azure forms', () => {
    expect(parseRemoteRepository('gs://bucket/a/b')).toMatchObject({ kind: 'gs', bucket: 'bucket', prefix: 'a/b/' });
    expect(parseRemoteRepository('as://acct/container/m')).toMatchObject({ kind: 'as', account: 'acct', container: 'container', prefix: 'm/' });
    expect(parseRemoteRepository('as://acct/container')).toMatchObject({ prefix: '' });
  });

  it('refuses malformed paths with the reason', () => {
    expect(() => parseRemoteRepository('s3://')).toThrow("invalid model repository path 's3://': no bucket name");
    expect(() => parseRemoteRepository('gs:///x')).toThrow('no bucket name');
    expect(() => parseRemoteRepository('as://acct')).toThrow('no container name');
    expect(() => parseRemoteRepository('as:///c')).toThrow('no storage account name');
  });
});

describe('object keys', () => {
  it('accepts keys that stay inside the repository folder', () => {
    for (const k of ['m/config.pbtxt', 'm/1/model.onnx', 'm/1/', 'README', 'm/1/.hidden', 'm/1/a..b']) {
      expect(objectKeyProblem(k)).toBeUndefined();
    }
  });

  it('refuses keys that would leave it or cannot name a file', () => {
    expect(objectKeyProblem('../evil')).toBe("path segment '..'");
    expect(objectKeyProblem('m/1/../../../etc/passwd')).toBe("path segment '..'");
    expect(objectKeyProblem('m/./x')).toBe("path segment '.'");
    expect(objectKeyProblem('m//x')).toBe("path segment ''");
    expect(objectKeyProblem('/etc/passwd')).toBe('absolute path');
    expect(objectKeyProblem('m\\..\\x')).toBe('control character or backslash');
    expect(objectKeyProblem('m/\u0000x')).toBe('control character or backslash');
    expect(objectKeyProblem('')).toBe('empty key');
    expect(objectKeyProblem('/')).toBe('empty key');
  });
});

describe('scrubSecrets', () => {
  it('removes secrets and their URL-encoded forms', () => {
    expect(scrubSecrets('key a+b/c= and a%2Bb%2Fc%3D', ['a+b/c='])).toBe('key *** and ***');
    expect(scrubSecrets('short ab', ['ab'])).toBe('short ab');
  });
});
