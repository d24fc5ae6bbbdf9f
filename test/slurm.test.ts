/**
 * The Slurm job array of docs/files.md under a real Slurm (Debian's slurm-wlm, one node on
 * this machine, started and stopped here as root, as CI runs): a task is cancelled with
 * `scancel` (SIGTERM, as Slurm stops jobs) while it waits for its shard's lock, and the same
 * array is submitted again. Checked: the cancelled task stopped with its SIGTERM message and no
 * process of the command outlived any job; together the two submissions wrote every output
 * once, each the bytes normalizeFile gives, recorded in the shards' manifests. With
 * `--checksum`, a task cancelled mid-normalization stops cleanly, and one killed with SIGKILL
 * (what Slurm sends after KillWait) is resumed by the next submission. Slurm that does not
 * start fails the test.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeFile, npyHeader } from '../dist/node/index.js';
import { ShardLock } from '../dist/node/dataset/lock.js';

const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'rmsnorm-slurm-'));
const conf = join(root, 'slurm.conf');
const work = join(root, 'work');
const daemons: ChildProcess[] = [];
const env = { ...process.env, SLURM_CONF: conf };
const slurm = (cmd: string, args: string[], cwd = work) => execFileSync(cmd, args, { env, cwd, encoding: 'utf8' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `done()` holds, polling; throws `what` after `ms`. */
async function until(done: () => boolean, what: string, ms = 60_000): Promise<void> {
  for (const t0 = Date.now(); !done(); await sleep(200)) if (Date.now() - t0 > ms) throw new Error(`timed out: ${what}`);
}

/** Processes running this build's command (their pids), other than the test's own. */
function commandProcesses(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'latin1').includes(BIN)) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const jobsOf = (id: string) => slurm('squeue', ['-h', '-j', id, '-o', '%i %T']).trim();

beforeAll(async () => {
  // munge: a key only root reads, a socket folder others may enter.
  for (const d of ['key', 'sock', 'state', 'spool', 'log']) mkdirSync(join(root, d), { recursive: true });
  chmodSync(join(root, 'key'), 0o700);
  chmodSync(root, 0o755);
  execFileSync('dd', ['if=/dev/urandom', `of=${join(root, 'key', 'munge.key')}`, 'bs=1024', 'count=1'], { stdio: 'ignore' });
  chmodSync(join(root, 'key', 'munge.key'), 0o400);
  const socket = join(root, 'sock', 'munge.socket');
  const start = (cmd: string, args: string[]) => {
    const p = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    daemons.push(p);
    return p;
  };
  start('munged', ['--foreground', '--force', `--key-file=${join(root, 'key', 'munge.key')}`, `--socket=${socket}`, `--pid-file=${join(root, 'sock', 'munged.pid')}`, `--log-file=${join(root, 'log', 'munged.log')}`, `--seed-file=${join(root, 'sock', 'seed')}`]);
  await until(() => existsSync(socket), 'munged socket', 10_000);
  const port = 20000 + (process.pid % 10000);
  writeFileSync(
    conf,
    [
      'ClusterName=test', 'SlurmctldHost=localhost', 'SlurmUser=root', 'SlurmdUser=root',
      'AuthType=auth/munge', `AuthInfo=socket=${socket}`, 'CredType=cred/munge',
      'ProctrackType=proctrack/linuxproc', 'TaskPlugin=task/none', 'SelectType=select/cons_tres', 'SelectTypeParameters=CR_CPU',
      'ReturnToService=2', 'JobRequeue=1', 'KillWait=5', 'MpiDefault=none', 'SchedulerType=sched/builtin',
      `SlurmctldPort=${port}`, `SlurmdPort=${port + 1}`,
      `StateSaveLocation=${join(root, 'state')}`, `SlurmdSpoolDir=${join(root, 'spool')}`,
      `SlurmctldPidFile=${join(root, 'state', 'slurmctld.pid')}`, `SlurmdPidFile=${join(root, 'spool', 'slurmd.pid')}`,
      `SlurmctldLogFile=${join(root, 'log', 'slurmctld.log')}`, `SlurmdLogFile=${join(root, 'log', 'slurmd.log')}`,
      'NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN',
      'PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP',
    ].join('\n') + '\n',
  );
  start('slurmctld', ['-D', '-f', conf]);
  start('slurmd', ['-D', '-f', conf]);
  await until(() => {
    try {
      return /idle/.test(slurm('sinfo', ['-h', '-o', '%T'], root));
    } catch {
      return false;
    }
  }, 'a Slurm node that is idle (see the logs in ' + join(root, 'log') + ')', 30_000);

  // The package as a user installs it: node_modules/.bin/rmsnorm-wasm, here this build's command.
  mkdirSync(join(work, 'node_modules', '.bin'), { recursive: true });
  writeFileSync(join(work, 'node_modules', '.bin', 'rmsnorm-wasm'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
  for (let i = 0; i < 16; i++) {
    const rows = 1 + i * 3;
    const x = new Float32Array(rows * 64).map((_, k) => Math.sin(k * 0.3 + i) * (1 + (i % 5)));
    mkdirSync(join(work, 'shared', 'acts', `g${i % 3}`), { recursive: true });
    writeFileSync(join(work, 'shared', 'acts', `g${i % 3}`, `a${i}.npy`), Buffer.concat([npyHeader([rows, 64]), Buffer.from(x.buffer)]));
  }
  writeFileSync(join(work, 'shared', 'w.npy'), Buffer.concat([npyHeader([64]), Buffer.from(new Float32Array(64).map((_, k) => 0.5 + k / 64).buffer)]));
}, 90_000);

afterAll(async () => {
  for (const p of daemons.reverse()) {
    try {
      process.kill(-p.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await sleep(500);
  for (const p of daemons) {
    try {
      process.kill(-p.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(root, { recursive: true, force: true });
});

describe('the Slurm job array of docs/files.md, under Slurm', () => {
  it('a task cancelled with scancel stops and leaves no process; the array submitted again completes the dataset, each output once', async () => {
    const page = readFileSync(new URL('../docs/files.md', import.meta.url), 'utf8');
    const block = [...page.matchAll(/^```bash\n([\s\S]*?)^```/gm)].map((m) => m[1]!).find((b) => b.includes('SLURM_ARRAY_TASK_ID'))!;
    expect(block).toMatch(/^exec node_modules\/\.bin\/rmsnorm-wasm /m);
    expect(block).toMatch(/--open-mode=append/);
    const [lo, hi] = /--array=(\d+)-(\d+)/.exec(block)!.slice(1).map(Number) as [number, number];
    const n = hi - lo + 1;
    // As documented, but on this machine's folders and its 2 CPUs.
    const script = block.replaceAll('/shared/', `${work}/shared/`).replace(/--cpus-per-task=\d+/, '--cpus-per-task=1');
    writeFileSync(join(work, 'normalize.sh'), script);
    const out = join(work, 'shared', 'normed');

    // Shard 3 is held by another run: its task waits for the lock, and is cancelled there.
    mkdirSync(out, { recursive: true });
    const lock = await ShardLock.acquire(out, 3, n, { waitS: 0, staleS: 60 });
    const first = /Submitted batch job (\d+)/.exec(slurm('sbatch', ['normalize.sh']))![1]!;
    const log = (job: string, task: number) => {
      const f = join(work, `rmsnorm-${job}_${task}.log`);
      return existsSync(f) ? readFileSync(f, 'utf8') : '';
    };
    await until(() => /waiting for/.test(log(first, 3)), 'task 3 waiting for its lock');
    await until(() => jobsOf(first).split('\n').filter(Boolean).length === 1, 'every other task done');
    slurm('scancel', [`${first}_3`]);
    await until(() => jobsOf(first) === '', 'the cancelled task gone');
    await lock.release();
    expect(log(first, 3)).toMatch(/stopped by SIGTERM/);
    for (let t = lo; t <= hi; t++) if (t !== 3) expect(log(first, t)).toMatch(/^normalized \d+ files? of \d+/m);
    await until(() => commandProcesses().length === 0, 'no process of the command left after the job', 10_000);

    // The same array again: shard 3 is written now, the others find their work done.
    const second = /Submitted batch job (\d+)/.exec(slurm('sbatch', ['normalize.sh']))![1]!;
    await until(() => jobsOf(second) === '', 'the second submission done');
    expect(commandProcesses()).toEqual([]);
    expect(log(second, 3)).toMatch(/^normalized [1-9]\d* files? of \d+ .*0 already done/m);
    for (let t = lo; t <= hi; t++) if (t !== 3) expect(log(second, t)).toMatch(/^nothing to do: (\d+) of \1 files already done/m);
    // Started directly, not by npm: no warning about signals.
    for (let t = lo; t <= hi; t++) expect(log(first, t) + log(second, t)).not.toMatch(/warning: started through npm/);

    // Every input once, in one shard's manifest, with the bytes normalizeFile gives it.
    const inputs = readdirSync(join(work, 'shared', 'acts'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.npy'));
    const recorded = new Map<string, number>();
    for (let k = 0; k < n; k++) {
      const f = join(out, `manifest.shard-${k}-of-${n}.jsonl`);
      if (!existsSync(f)) continue;
      for (const line of readFileSync(f, 'utf8').split('\n').filter(Boolean)) {
        const r = JSON.parse(line) as { output: string };
        recorded.set(r.output, (recorded.get(r.output) ?? 0) + 1);
      }
    }
    expect([...recorded.keys()].sort()).toEqual([...inputs].sort());
    expect([...recorded.values()].every((c) => c === 1)).toBe(true);
    for (const rel of inputs) {
      const ref = join(root, 'ref.npy');
      await normalizeFile(join(work, 'shared', 'acts', rel), ref, { weight: join(work, 'shared', 'w.npy'), threads: 1 });
      expect(readFileSync(join(out, rel)).equals(readFileSync(ref)), rel).toBe(true);
    }
  }, 180_000);
});

describe('--checksum under Slurm: scancel mid-normalization, and SIGKILL', () => {
  it('a task cancelled while it writes stops at SIGTERM (its message, no temporary, no lock); one killed with SIGKILL is resumed by the next submission, every output once with its recorded SHA-256', async () => {
    const data = join(work, 'big');
    mkdirSync(data, { recursive: true });
    for (let i = 0; i < 48; i++) {
      const x = new Float32Array(1024 * 1024).map((_, k) => Math.sin(k * 0.001 + i));
      writeFileSync(join(data, `b${String(i).padStart(2, '0')}.npy`), Buffer.concat([npyHeader([1024, 1024]), Buffer.from(x.buffer)]));
    }
    const out = join(work, 'big-out');
    const script = (name: string) => {
      writeFileSync(
        join(work, name),
        ['#!/bin/bash', '#SBATCH --cpus-per-task=1', `#SBATCH --output=${name}-%j.log`, '#SBATCH --open-mode=append',
          `exec node_modules/.bin/rmsnorm-wasm normalize ${data} --out-dir ${out} --checksum --threads 1`].join('\n') + '\n',
      );
      return name;
    };
    const logOf = (name: string, job: string) => {
      const f = join(work, `${name}-${job}.log`);
      return existsSync(f) ? readFileSync(f, 'utf8') : '';
    };
    const writing = () => existsSync(out) && readdirSync(out).some((f) => f.includes('.tmp-'));
    const leftovers = () => readdirSync(out).filter((f) => f.includes('.tmp-') || f.endsWith('.lock'));

    // SIGTERM from scancel while outputs are being written.
    const a = /Submitted batch job (\d+)/.exec(slurm('sbatch', [script('term.sh')]))![1]!;
    await until(writing, 'the first task writing');
    slurm('scancel', [a]);
    await until(() => jobsOf(a) === '', 'the cancelled job gone', 30_000);
    await until(() => commandProcesses().length === 0, 'no process of the command left', 10_000);
    expect(logOf('term.sh', a)).toMatch(/stopped by SIGTERM/);
    expect(logOf('term.sh', a)).not.toMatch(/EBADF|Error:/);
    expect(leftovers()).toEqual([]);

    // SIGKILL: the run dies outright, leaving what it was writing; the next submission resumes.
    const b = /Submitted batch job (\d+)/.exec(slurm('sbatch', [script('kill.sh')]))![1]!;
    await until(() => writing() && existsSync(join(out, 'rmsnorm.lock')), 'the second task writing');
    slurm('scancel', ['--signal=KILL', '--full', b]);
    await until(() => jobsOf(b) === '', 'the killed job gone', 30_000);
    await until(() => commandProcesses().length === 0, 'no process of the command left', 10_000);
    const c = /Submitted batch job (\d+)/.exec(slurm('sbatch', [script('resume.sh')]))![1]!;
    await until(() => jobsOf(c) === '', 'the resuming job done', 120_000);
    expect(logOf('resume.sh', c)).toMatch(/^normalized \d+ files? of 48 /m);
    expect(leftovers()).toEqual([]);
    const records = readFileSync(join(out, 'manifest.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { output: string; sha256: string });
    const newest = new Map(records.map((r) => [r.output, r]));
    expect([...newest.keys()].sort()).toEqual(readdirSync(data).sort());
    for (const [name, r] of newest) expect(createHash('sha256').update(readFileSync(join(out, name))).digest('hex'), name).toBe(r.sha256);
  }, 240_000);
});

describe('started by npm under a scheduler', () => {
  it('npx prints one warning that the stop signal may miss the command; started directly, none', () => {
    const dir = join(root, 'npx');
    mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{"name":"app","version":"1.0.0","private":true}');
    writeFileSync(join(dir, 'node_modules', '.bin', 'rmsnorm-wasm'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
    writeFileSync(join(dir, 'x.npy'), Buffer.concat([npyHeader([2, 8]), Buffer.from(new Float32Array(16).fill(1).buffer)]));
    const run = (cmd: string[], extra: Record<string, string>) => {
      const r = spawnSync(cmd[0]!, [...cmd.slice(1), 'normalize', 'x.npy', 'y.npy'], { cwd: dir, env: { ...process.env, ...extra }, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return r.stderr;
    };
    const warned = /^rmsnorm-wasm: warning: started through npm \(npm exec\) under Slurm \(SLURM_JOB_ID is set\).*node_modules\/\.bin\/rmsnorm-wasm/m;
    const npx = run(['npx', 'rmsnorm-wasm'], { SLURM_JOB_ID: '42' });
    expect(npx).toMatch(warned);
    expect(npx.match(/warning/g)).toHaveLength(1);
    expect(run(['npx', 'rmsnorm-wasm'], { KUBERNETES_SERVICE_HOST: '10.0.0.1' })).toMatch(/under Kubernetes/);
    // npm's variables inherited from a shell npm started long before are not npm as the parent.
    expect(run(['node_modules/.bin/rmsnorm-wasm'], { SLURM_JOB_ID: '42', npm_command: 'exec' })).not.toMatch(/warning/);
    expect(run(['npx', 'rmsnorm-wasm'], { SLURM_JOB_ID: '' })).not.toMatch(/warning/);
  }, 60_000);
});
