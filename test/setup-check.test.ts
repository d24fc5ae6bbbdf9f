/**
 * scripts/check-tools.sh: every external tool the build and tests call must come from what
 * scripts/setup.sh installs. On this (set-up) machine it passes; with any one Debian package
 * of its list hidden from dpkg, or a cargo-installed tool at another version, it fails and
 * names the program and the package. Packages are hidden with a stand-in `dpkg` ahead on PATH
 * (really removing packages would break the other test files running beside this one; the
 * closing notes record a real removal run).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'check-tools.sh');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'check-tools-'));
  dirs.push(d);
  return d;
}

/** The packages and programs scripts/tools.sh lists, as bash sees them. */
function toolList(): { packages: string[]; tools: string[] } {
  const r = spawnSync('bash', ['-c', 'source scripts/tools.sh; printf "%s\\n" "${DEB_PACKAGES[@]}"; echo --; printf "%s\\n" "${DEB_TOOLS[@]}"'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const [pk, tl] = r.stdout.trim().split('\n--\n');
  return { packages: pk!.split('\n'), tools: tl!.split('\n') };
}

function run(env: Record<string, string> = {}): { code: number | null; err: string } {
  const r = spawnSync('bash', [SCRIPT], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, err: r.stderr };
}

/** A PATH whose `dpkg` answers as the real one, except that `pkg` owns nothing. */
function pathHiding(pkg: string): string {
  const bin = join(tmp(), 'bin');
  mkdirSync(bin);
  const fake = join(bin, 'dpkg');
  writeFileSync(
    fake,
    `#!/bin/bash\nout=$(/usr/bin/dpkg "$@" 2>/dev/null) || exit $?\n` +
      `printf '%s\\n' "$out" | grep -v '^${pkg}:' | grep . || { echo "dpkg-query: no path found" >&2; exit 1; }\n`,
  );
  chmodSync(fake, 0o755);
  return `${bin}:${process.env.PATH}`;
}

describe('scripts/check-tools.sh', () => {
  const { packages, tools } = toolList();

  it('lists rust-web-llvm and lld-22 (rust-lld) among the packages setup.sh installs', () => {
    expect(packages).toEqual(expect.arrayContaining(['rustc-web', 'cargo-web', 'rust-web-src', 'rust-web-llvm', 'lld-22', 'chromium']));
    expect(tools.some((t) => t.startsWith('rust-lld:'))).toBe(true);
  });

  it("setup.sh's header names exactly the Debian packages of scripts/tools.sh", () => {
    const setup = readFileSync(join(ROOT, 'scripts', 'setup.sh'), 'utf8');
    const line = /^#\s+((?:[a-z0-9.+-]+ ?)+)$/m.exec(setup.split('the Debian packages are:')[1] ?? '');
    expect(line?.[1]!.trim().split(' ').sort()).toEqual([...packages].sort());
  });

  it('passes on this set-up machine', () => {
    const r = run();
    expect(r.err).toContain('check-tools: ok');
    expect(r.code).toBe(0);
  });

  it.each(toolList().packages)('fails naming the program and the package when %s is missing', (pkg) => {
    const r = run({ PATH: pathHiding(pkg) });
    expect(r.code).toBe(1);
    expect(r.err).toContain(`Debian package ${pkg}`);
    // The program that package provides is named too.
    const entry = tools.find((t) => t.split(':')[1]!.split('>').includes(pkg));
    const prog = entry ? entry.split(':')[0]! : '/usr/lib/rustlib/src/rust/library';
    expect(r.err).toContain(prog);
  });

  it('fails when wasm-bindgen or wasm-pack is not the pinned version', () => {
    const home = tmp();
    const bin = join(home, '.cargo', 'bin');
    mkdirSync(bin, { recursive: true });
    for (const [name, version] of [['wasm-bindgen', 'wasm-bindgen 0.2.99'], ['wasm-pack', 'wasm-pack 0.1.0']]) {
      writeFileSync(join(bin, name!), `#!/bin/sh\necho ${version}\n`);
      chmodSync(join(bin, name!), 0o755);
    }
    const r = run({ HOME: home });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/wasm-bindgen is '0\.2\.99', expected 0\.2\.\d+/);
    expect(r.err).toMatch(/wasm-pack is '0\.1\.0', expected \d+\.\d+\.\d+/);
  });
});
