/**
 * The dict literal of a `.npy` header, read as NumPy reads it (or refused, with an
 * {@link NpyError}): a small parser of exactly the Python syntax NumPy writes, with integers
 * kept exact.
 * @module
 */

/** A file that is not an `.npy` this package can read; the message says what is wrong. */
export class NpyError extends Error {
  /** `'NpyError'`. */
  override name = 'NpyError';
}

/** `s` in double quotes, with everything but printable ASCII escaped: safe in a one-line message. */
export function quoted(s: string, max = 120): string {
  const cut = s.length > max ? `${s.slice(0, max)}…` : s;
  return JSON.stringify(cut).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A value of the header dict: a string, a bool, an integer, or a tuple of integers (the shape). */
type HeaderValue = string | boolean | bigint | bigint[];

/**
 * Reads the header's dict literal: `{`, `'key': value` pairs separated by commas (a trailing
 * comma allowed), `}`, then only whitespace. Strings are quoted with ' or " and hold no escape;
 * integers are decimal without sign, underscore or leading zero (Python 2's `L` suffix allowed
 * in versions 1.0 and 2.0, as NumPy allows it there). Anything else, a repeated key, or keys
 * other than NumPy's three, throws an {@link NpyError} quoting the header.
 */
export class HeaderReader {
  private at = 0;
  constructor(
    private readonly text: string,
    private readonly name: string,
    private readonly longSuffix: boolean,
  ) {}

  dict(): Map<string, HeaderValue> {
    const out = new Map<string, HeaderValue>();
    this.expect('{');
    while (this.peek() !== '}') {
      const key = this.string();
      if (out.has(key)) this.fail(`the key ${quoted(key)} appears twice`);
      this.expect(':');
      out.set(key, this.value());
      if (this.peek() !== ',') break;
      this.at++;
    }
    this.expect('}');
    this.skipSpace();
    if (this.at !== this.text.length) this.fail('text after the closing brace');
    const keys = [...out.keys()].sort();
    if (keys.join() !== 'descr,fortran_order,shape') {
      this.fail(`its keys must be descr, fortran_order and shape, not ${keys.map((k) => quoted(k)).join(', ') || 'none'}`);
    }
    return out;
  }

  private value(): HeaderValue {
    const c = this.peek();
    if (c === "'" || c === '"') return this.string();
    if (c === '(') return this.tuple();
    for (const [word, v] of [['True', true], ['False', false]] as const) {
      if (this.text.startsWith(word, this.at) && !/\w/.test(this.text[this.at + word.length] ?? '')) {
        this.at += word.length;
        return v;
      }
    }
    return this.integer();
  }

  private integer(expected = 'a string, True, False, a non-negative decimal integer or a tuple'): bigint {
    const m = /^(0|[1-9][0-9]*)(L?)(?![\w.])/.exec(this.text.slice(this.at, this.at + 400));
    if (!m || (m[2] && !this.longSuffix)) return this.fail(`expected ${expected}`);
    this.at += m[0].length;
    // Exact: a shape past 2^53 is refused by its digits, not by a rounded number.
    return BigInt(m[1]!);
  }

  private string(): string {
    const q = this.peek();
    if (q !== "'" && q !== '"') this.fail('expected a quoted key');
    const end = this.text.indexOf(q, this.at + 1);
    const body = end < 0 ? '' : this.text.slice(this.at + 1, end);
    if (end < 0 || /[\\\n]/.test(body)) this.fail('a string with no closing quote, or with an escape');
    this.at = end + 1;
    return body;
  }

  private tuple(): bigint[] {
    this.expect('(');
    const out: bigint[] = [];
    let comma = false;
    while (this.peek() !== ')') {
      out.push(this.integer('a non-negative decimal integer'));
      comma = this.peek() === ',';
      if (!comma) break;
      this.at++;
    }
    this.expect(')');
    // (6) is the integer 6 in Python, not a tuple: NumPy refuses it as a shape.
    if (out.length === 1 && !comma) this.fail('the shape (n) is not a tuple: a one-axis shape is written (n,)');
    return out;
  }

  /** Skips whitespace and returns the next character ('' at the end). */
  private peek(): string {
    this.skipSpace();
    return this.text[this.at] ?? '';
  }

  private skipSpace(): void {
    while (/[ \t\n\r\f]/.test(this.text[this.at] ?? '')) this.at++;
  }

  private expect(c: string): void {
    if (this.peek() !== c) this.fail(`expected ${quoted(c)}`);
    this.at++;
  }

  private fail(what: string): never {
    throw new NpyError(`${this.name}: malformed .npy header (${what}, at character ${this.at}): ${quoted(this.text.trimEnd())}`);
  }
}

