import { parseServeArgs, UsageError } from './cli-parser';

const REPO = '--model-repository=/models';

describe('--role and --redis (distributed mode)', () => {
  it('leaves the server embedded without --role', () => {
    const o = parseServeArgs([REPO]);
    expect(o.roles).toEqual([]);
    expect(o.redis).toBeUndefined();
  });

  it('takes one role or a comma list, each once, with the Redis URL', () => {
    expect(parseServeArgs([REPO, '--role=gateway', '--redis=redis://r:6379']).roles).toEqual(['gateway']);
    const o = parseServeArgs([REPO, '--role', 'scheduler,worker', '--role=worker', '--redis', 'rediss://:pw@r:6380/1']);
    expect(o.roles).toEqual(['scheduler', 'worker']);
    expect(o.redis).toBe('rediss://:pw@r:6380/1');
  });

  it('refuses an unknown role, a role without --redis and --redis without a role', () => {
    expect(() => parseServeArgs([REPO, '--role=router', '--redis=redis://r'])).toThrow(/unknown role 'router': expected gateway, scheduler or worker/);
    expect(() => parseServeArgs([REPO, '--role=gateway'])).toThrow(UsageError);
    expect(() => parseServeArgs([REPO, '--role=gateway'])).toThrow("'--role' requires '--redis=redis://host:port'");
    expect(() => parseServeArgs([REPO, '--redis=redis://r'])).toThrow("'--redis' is only used with '--role'");
  });
});
