/**
 * The manifest of a dataset run: one JSON line per output, appended when the output has been
 * renamed into place, so that a line always names a complete file. Each shard writes its own
 * file in the output directory (`manifest.jsonl`, or `manifest.shard-I-of-N.jsonl` with a
 * shard), and a run reads them all to know what is already done.
 * @module
 */
import { open, readdir, readFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { DatasetRecord } from './types.js';

/** The manifest's file name for shard `index` of `count`. */
export function manifestName(index: number, count: number): string {
  return count === 1 ? 'manifest.jsonl' : `manifest.shard-${index}-of-${count}.jsonl`;
}

/**
 * Every record in the manifests of `outDir` (all shards'), by output path; a later line
 * replaces an earlier one. A line that does not parse (the end of a file whose process was
 * killed while appending) is skipped.
 */
export async function readManifests(outDir: string): Promise<Map<string, DatasetRecord>> {
  const done = new Map<string, DatasetRecord>();
  let names: string[];
  try {
    names = (await readdir(outDir)).filter((n) => /^manifest(\.shard-\d+-of-\d+)?\.jsonl$/.test(n)).sort();
  } catch {
    return done;
  }
  for (const name of names) {
    for (const line of (await readFile(join(outDir, name), 'utf8')).split('\n')) {
      try {
        const r = JSON.parse(line) as DatasetRecord;
        if (typeof r.output === 'string') done.set(r.output, r);
      } catch {
        // an empty or torn line
      }
    }
  }
  return done;
}

/** Appends records to one manifest file, each line with one write. */
export class ManifestWriter {
  private constructor(private readonly fh: FileHandle) {}

  /** Opens (creates) `path` for appending; a torn last line left by a killed run is ended first. */
  static async open(path: string): Promise<ManifestWriter> {
    const fh = await open(path, 'a+');
    const { size } = await fh.stat();
    if (size > 0) {
      const last = Buffer.alloc(1);
      await fh.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) await fh.write('\n');
    }
    return new ManifestWriter(fh);
  }

  /**
   * Appends `record` as one line. Not flushed line by line: a line lost to a power failure only
   * means its output is redone, while its output was flushed before the line was written.
   */
  async append(record: DatasetRecord): Promise<void> {
    await this.fh.write(JSON.stringify(record) + '\n');
  }

  /** Flushes (`fdatasync`) and closes the file. */
  async close(): Promise<void> {
    await this.fh.datasync().catch(() => {});
    await this.fh.close();
  }
}
