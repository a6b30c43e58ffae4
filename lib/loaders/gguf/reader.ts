// A small buffered reader over an fs FileHandle: the GGUF parser reads the header through it, a
// window of the file at a time, and the tensor loader reads tensor data with readAt. It never reads
// the whole file and never allocates more than the file holds: every length taken from the file is
// checked against the bytes left before anything is allocated for it.
import { open, type FileHandle } from 'node:fs/promises';
import { TensorOpsError } from '../../errors';

/** The header window: enough for most metadata, never more than the file. */
const WINDOW = 1 << 20;

export class GgufFileReader {
  readonly path: string;
  /** Bytes in the file when it was opened. */
  readonly size: number;
  readonly #handle: FileHandle;
  readonly #buf: Buffer;
  /** File offset of #buf[0], and how many bytes of #buf are valid. */
  #bufStart = 0;
  #bufLength = 0;
  /** The read position. */
  #pos = 0;
  #closed = false;

  private constructor(path: string, handle: FileHandle, size: number) {
    this.path = path;
    this.#handle = handle;
    this.size = size;
    this.#buf = Buffer.alloc(Math.min(WINDOW, size));
  }

  /** Opens a file for reading; E_LOAD when it cannot be opened or is not a regular file. */
  static async open(path: string): Promise<GgufFileReader> {
    if (typeof path !== 'string' || path === '') {
      throw new TensorOpsError('E_ARG', `path must be a non-empty string; got ${typeof path === 'string' ? "''" : typeof path}`);
    }
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      throw new TensorOpsError('E_LOAD', `cannot open '${path}': ${(err as Error).message}`, { cause: err });
    }
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new TensorOpsError('E_LOAD', `'${path}' is not a regular file`);
      return new GgufFileReader(path, handle, st.size);
    } catch (err) {
      await handle.close().catch(() => undefined);
      if (err instanceof TensorOpsError) throw err;
      throw new TensorOpsError('E_LOAD', `cannot read '${path}': ${(err as Error).message}`, { cause: err });
    }
  }

  get position(): number {
    return this.#pos;
  }

  /** Bytes from the read position to the end of the file. */
  get remaining(): number {
    return this.size - this.#pos;
  }

  /** An E_FORMAT error about this file. */
  error(message: string): TensorOpsError {
    return new TensorOpsError('E_FORMAT', `GGUF file '${this.path}': ${message}`);
  }

  /**
   * Makes the next n bytes readable by the synchronous getters (n at most the window); E_FORMAT
   * naming `what` when the file ends first. Returns a promise only when it has to read.
   */
  need(n: number, what: string): Promise<void> | undefined {
    if (n > this.remaining) {
      throw this.error(`${what} needs ${n} bytes at offset ${this.#pos}, but the file ends ${this.remaining} bytes later (truncated?)`);
    }
    if (this.#pos + n <= this.#bufStart + this.#bufLength && this.#pos >= this.#bufStart) return undefined;
    if (n > this.#buf.length) throw new Error(`internal: need(${n}) is larger than the window`);
    return this.#fill(what);
  }

  async #fill(what: string): Promise<void> {
    const length = Math.min(this.#buf.length, this.size - this.#pos);
    await this.#readFully(this.#buf.subarray(0, length), this.#pos, what);
    this.#bufStart = this.#pos;
    this.#bufLength = length;
  }

  #at(n: number): number {
    const i = this.#pos - this.#bufStart;
    this.#pos += n;
    return i;
  }

  // Synchronous getters: call need() for their bytes first.
  u8(): number { return this.#buf[this.#at(1)]; }
  i8(): number { return this.#buf.readInt8(this.#at(1)); }
  u16(): number { return this.#buf.readUInt16LE(this.#at(2)); }
  i16(): number { return this.#buf.readInt16LE(this.#at(2)); }
  u32(): number { return this.#buf.readUInt32LE(this.#at(4)); }
  i32(): number { return this.#buf.readInt32LE(this.#at(4)); }
  f32(): number { return this.#buf.readFloatLE(this.#at(4)); }
  f64(): number { return this.#buf.readDoubleLE(this.#at(8)); }
  u64(): bigint { return this.#buf.readBigUInt64LE(this.#at(8)); }
  i64(): bigint { return this.#buf.readBigInt64LE(this.#at(8)); }

  /** Copies the next `into.length` bytes into `into` (any length: large ones are read directly). */
  async read(into: Uint8Array, what: string): Promise<void> {
    const n = into.length;
    if (n <= this.#buf.length) {
      const p = this.need(n, what);
      if (p) await p;
      const i = this.#at(n);
      into.set(this.#buf.subarray(i, i + n));
      return;
    }
    if (n > this.remaining) {
      throw this.error(`${what} needs ${n} bytes at offset ${this.#pos}, but the file ends ${this.remaining} bytes later (truncated?)`);
    }
    await this.#readFully(into, this.#pos, what);
    this.#pos += n;
  }

  /** Moves the read position (within the file). */
  seek(offset: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > this.size) {
      throw this.error(`offset ${offset} is outside the file's ${this.size} bytes`);
    }
    this.#pos = offset;
  }

  /** Reads `into.length` bytes at a file offset, unbuffered (tensor data). */
  async readAt(into: Uint8Array, offset: number, what: string): Promise<void> {
    if (offset + into.length > this.size) {
      throw this.error(`${what}: bytes ${offset} to ${offset + into.length} are past the end of the file (${this.size} bytes)`);
    }
    await this.#readFully(into, offset, what);
  }

  async #readFully(into: Uint8Array, offset: number, what: string): Promise<void> {
    if (this.#closed) throw new TensorOpsError('E_DISPOSED', `the reader of '${this.path}' was closed`);
    let done = 0;
    while (done < into.length) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await this.#handle.read(into, done, into.length - done, offset + done));
      } catch (err) {
        throw new TensorOpsError('E_LOAD', `'${this.path}': reading ${what} failed: ${(err as Error).message}`, { cause: err });
      }
      if (bytesRead === 0) {
        throw this.error(`${what}: the file ended at ${offset + done} bytes, before the ${into.length} bytes at offset ${offset} (it was truncated after it was opened?)`);
      }
      done += bytesRead;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#handle.close();
  }
}
