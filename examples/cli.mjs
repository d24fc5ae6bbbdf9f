// The command over a .npy file: this example writes a small float32 .npy (8 rows of 4096),
// normalizes it with `npx rmsnorm-wasm normalize`, and reads the result back.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { npyHeader, parseNpyHeader } from 'rmsnorm-wasm/node';

const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-cli-'));
const rows = 8, dim = 4096;
const data = new Float32Array(rows * dim).map((_, i) => Math.sin(i));
writeFileSync(join(dir, 'acts.npy'), Buffer.concat([npyHeader([rows, dim]), Buffer.from(data.buffer)]));

const out = execFileSync('npx', ['--no-install', 'rmsnorm-wasm', 'normalize', join(dir, 'acts.npy'), join(dir, 'normed.npy'), '--json'], { encoding: 'utf8' });
const summary = JSON.parse(out);
console.log(`normalized ${summary.rows} rows × ${summary.dim} in ${summary.seconds} s`);

const bytes = readFileSync(join(dir, 'normed.npy'));
const header = parseNpyHeader(bytes, bytes.length, 'normed.npy');
const y = new Float32Array(bytes.buffer.slice(bytes.byteOffset + header.dataOffset, bytes.byteOffset + bytes.length));
const rms = Math.sqrt(y.subarray(0, dim).reduce((s, v) => s + v * v, 0) / dim);
console.log(`shape (${header.shape.join(', ')}), first row's rms ${rms.toFixed(5)} (1 after RMSNorm)`);
rmSync(dir, { recursive: true, force: true });
