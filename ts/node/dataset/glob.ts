/**
 * Glob patterns as a dataset's inputs (`data/**\/*.npy`): `**` as a whole name matches any
 * number of directories (none included; at the end, any directories and then a file: `a/**` is
 * `a/**\/*`), `*` any characters within a name, `?` one, `[...]` one
 * of a class (`[a-c]`, `[!a]` or `[^a]` for one not in it). The leading names without any of
 * these are the directory walked.
 *
 * A pattern is compiled once, when the options are checked (a malformed class, such as the
 * reversed range `[z-a]`, is a RangeError then), and matched without backtracking: the walk
 * carries the set of the pattern's places a path can have reached, name by name, and a name by
 * the set of places within its part of the pattern, character by character. A path costs at
 * most its length times the pattern's, whatever the pattern; a directory no place survives is
 * not entered.
 * @module
 */

/** The longest pattern taken, in characters. */
const GLOB_MAX_CHARS = 4096;

/** One element of a name's pattern. */
type Atom =
  | { readonly t: 'char'; readonly c: number }
  | { readonly t: 'one' }
  | { readonly t: 'star' }
  | { readonly t: 'class'; readonly negate: boolean; readonly ranges: readonly (readonly [number, number])[] };

/** A part of the pattern between slashes: `**`, or a name's pattern. */
type Part = { readonly t: 'deep' } | { readonly t: 'name'; readonly atoms: readonly Atom[] };

/** A compiled pattern (see the module doc). */
export interface Glob {
  /** The pattern as given. */
  readonly pattern: string;
  /** The directory walked: the leading names without a glob character (`.` when there are none, `/` for the root). */
  readonly base: string;
  readonly parts: readonly Part[];
}

/** Where a path can be in a pattern: the indices of the parts still to match (parts.length: all matched). */
export type Places = readonly number[];

/** Whether `s` has a glob character (`*`, `?`, `[`). */
export const isGlob = (s: string): boolean => /[*?[]/.test(s);

/** The code points of `s`. */
const points = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0)!);

/** A name's pattern as atoms; `what` names the pattern in a RangeError. */
function atomsOf(part: string, what: string): Atom[] {
  const cs = points(part);
  const atoms: Atom[] = [];
  for (let i = 0; i < cs.length; i++) {
    const c = cs[i]!;
    if (c === 0x2a /* * */) {
      while (cs[i + 1] === 0x2a) i++;
      atoms.push({ t: 'star' });
    } else if (c === 0x3f /* ? */) atoms.push({ t: 'one' });
    else if (c === 0x5b /* [ */) {
      // A class: `]` first in it is a member; without a closing `]` the `[` is itself.
      let j = i + 1;
      const negate = cs[j] === 0x21 || cs[j] === 0x5e; // ! or ^
      if (negate) j++;
      const start = j;
      if (cs[j] === 0x5d) j++;
      while (j < cs.length && cs[j] !== 0x5d) j++;
      if (j >= cs.length) {
        atoms.push({ t: 'char', c });
        continue;
      }
      const body = cs.slice(start, j);
      const ranges: [number, number][] = [];
      for (let k = 0; k < body.length; k++) {
        if (body[k + 1] === 0x2d /* - */ && k + 2 < body.length) {
          const [lo, hi] = [body[k]!, body[k + 2]!];
          if (lo > hi) {
            throw new RangeError(`${what} has the range ${String.fromCodePoint(lo)}-${String.fromCodePoint(hi)}, which runs backwards (write [${String.fromCodePoint(hi)}-${String.fromCodePoint(lo)}])`);
          }
          ranges.push([lo, hi]);
          k += 2;
        } else ranges.push([body[k]!, body[k]!]);
      }
      if (ranges.length === 0) throw new RangeError(`${what} has an empty class []`);
      atoms.push({ t: 'class', negate, ranges });
      i = j;
    } else atoms.push({ t: 'char', c });
  }
  return atoms;
}

/**
 * Compiles `pattern` (see the module doc); `what` names it in errors (`normalizeDataset: inputs[2]`). A RangeError
 * for a pattern longer than {@link GLOB_MAX_CHARS}, or a malformed class.
 */
export function compileGlob(pattern: string, what: string): Glob {
  if (pattern.length > GLOB_MAX_CHARS) throw new RangeError(`${what}: a pattern of ${pattern.length} characters, more than the ${GLOB_MAX_CHARS} taken`);
  const names = pattern.split(/[\\/]/);
  const first = names.findIndex(isGlob);
  const fixed = names.slice(0, first);
  const base = fixed.length === 0 ? '.' : fixed.join('/') || '/';
  const parts: Part[] = [];
  for (const n of names.slice(first)) {
    if (n === '' || n === '.') continue;
    if (n === '**') {
      if (parts.at(-1)?.t !== 'deep') parts.push({ t: 'deep' });
    } else parts.push({ t: 'name', atoms: atomsOf(n, `${what}: the pattern ${JSON.stringify(pattern).slice(0, 200)}`) });
  }
  // A `**` at the end takes any directories and then a name: `a/**` is `a/**/*`.
  if (parts.at(-1)?.t === 'deep') parts.push({ t: 'name', atoms: [{ t: 'star' }] });
  return { pattern, base, parts };
}

/** Whether atom `a` takes the character `c`. */
function takes(a: Atom, c: number): boolean {
  if (a.t === 'one') return true;
  if (a.t === 'char') return a.c === c;
  if (a.t === 'class') return a.ranges.some(([lo, hi]) => c >= lo && c <= hi) !== a.negate;
  return false;
}

/** Whether `name` matches `atoms`: the set of places in the atoms carried character by character. */
function nameMatches(atoms: readonly Atom[], name: string): boolean {
  const n = atoms.length;
  // at[k]: the atoms before k have taken the characters so far. A star takes none or more.
  let at = new Uint8Array(n + 1);
  const close = (s: Uint8Array) => {
    for (let k = 0; k < n; k++) if (s[k] && atoms[k]!.t === 'star') s[k + 1] = 1;
  };
  at[0] = 1;
  close(at);
  for (const ch of name) {
    const c = ch.codePointAt(0)!;
    const next = new Uint8Array(n + 1);
    let any = false;
    for (let k = 0; k < n; k++) {
      if (!at[k]) continue;
      const a = atoms[k]!;
      if (a.t === 'star') {
        next[k] = 1;
        any = true;
      } else if (takes(a, c)) {
        next[k + 1] = 1;
        any = true;
      }
    }
    if (!any) return false;
    close(next);
    at = next;
  }
  return at[n] === 1;
}

/** The places a path starts at: before the first part (and past any leading `**`). */
export const startOf = (g: Glob): Places => closure(g, [0]);

/** `places` with every place before a `**` also past it (a `**` matches no directory too). */
function closure(g: Glob, places: readonly number[]): number[] {
  const out = new Set(places);
  for (const p of [...out].sort((a, b) => a - b)) {
    for (let k = p; k < g.parts.length && g.parts[k]!.t === 'deep'; k++) out.add(k + 1);
  }
  return [...out].sort((a, b) => a - b);
}

/** The places after the next name of a path, `name`, from `places`; empty when no place survives. */
export function step(g: Glob, places: Places, name: string): Places {
  const next: number[] = [];
  for (const p of places) {
    const part = g.parts[p];
    if (!part) continue;
    if (part.t === 'deep') next.push(p); // `**` takes this directory and stays
    else if (nameMatches(part.atoms, name)) next.push(p + 1);
  }
  return closure(g, next);
}

/** Whether a path that reached `places` is matched whole. */
export const complete = (g: Glob, places: Places): boolean => places.includes(g.parts.length);

/** Whether a path that reached `places` can still be matched by something below it (a directory worth entering). */
export const open = (g: Glob, places: Places): boolean => places.some((p) => p < g.parts.length);
