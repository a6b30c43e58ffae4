// Progress output: on a terminal, one status line redrawn in place, with lasting lines (results
// worth keeping, failures) printed above it; elsewhere (a pipe, a CI log) every line once, as is.

export class Progress {
  readonly #out: NodeJS.WriteStream;
  readonly #tty: boolean;
  #status = false;

  constructor(out: NodeJS.WriteStream) {
    this.#out = out;
    this.#tty = out.isTTY === true;
  }

  get tty(): boolean {
    return this.#tty;
  }

  /** A transient line: on a terminal it replaces the previous one; elsewhere nothing is printed. */
  status(text: string): void {
    if (!this.#tty) return;
    const width = Math.max((this.#out.columns || 80) - 1, 20);  // 0 where the terminal does not say
    this.#out.write(`\r\x1b[2K${text.length > width ? `${text.slice(0, width - 3)}...` : text}`);
    this.#status = true;
  }

  /** A lasting line (the status line, if any, is cleared first). */
  line(text: string): void {
    this.clear();
    this.#out.write(`${text}\n`);
  }

  /** Removes the status line. */
  clear(): void {
    if (this.#status) this.#out.write('\r\x1b[2K');
    this.#status = false;
  }
}
