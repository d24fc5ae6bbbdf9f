/**
 * The CPU quota a Linux process runs under, read from its cgroups (v2 `cpu.max`, v1
 * `cpu.cfs_quota_us` / `cpu.cfs_period_us`): what a Kubernetes `limits.cpu` or Docker's
 * `--cpus` sets, and what `os.availableParallelism()` (the CPU affinity) does not see.
 * @module
 */

/**
 * The CPU quota of this process's cgroup and those above it, in cores rounded up (Infinity when
 * none is set or none can be read); `read` reads a file of /proc or /sys.
 */
export function cpuQuota(read: (path: string) => string): number {
  let lines: string[];
  try {
    lines = read('/proc/self/cgroup').split('\n');
  } catch {
    return Infinity;
  }
  let least = Infinity;
  const tryRead = (path: string): string | null => {
    try {
      return read(path).trim();
    } catch {
      return null;
    }
  };
  for (const line of lines) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (path === undefined) continue;
    const v2 = controllers === '';
    if (!v2 && !controllers!.split(',').includes('cpu')) continue;
    // The cgroup's folder and each one above it (a limit may be set on a parent: a pod's).
    for (let dir = path; ; dir = dir.slice(0, dir.lastIndexOf('/'))) {
      const base = `/sys/fs/cgroup${v2 ? '' : '/cpu'}${dir === '/' ? '' : dir}`;
      if (v2) {
        const [quota, period] = (tryRead(`${base}/cpu.max`) ?? 'max').split(/\s+/);
        if (quota !== 'max' && Number(quota) > 0 && Number(period) > 0) least = Math.min(least, Math.ceil(Number(quota) / Number(period)));
      } else {
        const quota = Number(tryRead(`${base}/cpu.cfs_quota_us`) ?? -1);
        const period = Number(tryRead(`${base}/cpu.cfs_period_us`) ?? 0);
        if (quota > 0 && period > 0) least = Math.min(least, Math.ceil(quota / period));
      }
      if (dir === '' || dir === '/') break;
    }
  }
  return least;
}
