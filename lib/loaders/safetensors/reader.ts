// Byte reading for the safetensors loader, apart from the parsing: one open file, read at offsets
// through an async FileHandle into buffers of exactly the size asked (never the whole file).
import { open as openFile, type FileHandle } from 'node:fs/promises';
import { TensorOpsError } from '../../errors';
import { allocateArray } from '../../host-arrays';

/** Largest single read (the data of one tensor is read in pieces of at most this). */
const CHUNK = 64 * 1024 * 1024;

export class SafetensorsFileReader {
  readonly path: string;
  readonly size: number;
  readonly #handle: FileHandle;

  private constructor(path: string, handle: FileHandle, size: number) {
    this.path = path;
    this.#handle = handle;
    this.size = size;
  }

  /** Opens a file for reading; E_LOAD when it cannot be opened or is not a regular file. */
  static async open(path: string): Promise<SafetensorsFileReader> {
    let handle: FileHandle;
    try {
      handle = await openFile(path, 'r');
    } catch (err) {
      throw new TensorOpsError('E_LOAD', `cannot open '${path}': ${(err as Error).message}`, { cause: err });
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw new TensorOpsError('E_LOAD', `'${path}' is not a regular file`);
      return new SafetensorsFileReader(path, handle, stat.size);
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * `length` bytes from `offset`, into a fresh buffer (its own ArrayBuffer, offset 0, so typed
   * views of it are aligned). E_FORMAT when the file ends first, naming `what`.
   */
  async read(offset: number, length: number, what: string): Promise<Uint8Array> {
    if (offset + length > this.size) {
      throw new TensorOpsError(
        'E_FORMAT',
        `'${this.path}': ${what} needs bytes ${offset} to ${offset + length}, but the file has ${this.size}`,
      );
    }
    const out = allocateArray(Uint8Array, length, what);
    let done = 0;
    while (done < length) {
      const want = Math.min(CHUNK, length - done);
      let got: number;
      try {
        ({ bytesRead: got } = await this.#handle.read(out, done, want, offset + done));
      } catch (err) {
        throw new TensorOpsError('E_LOAD', `'${this.path}': reading ${what} failed: ${(err as Error).message}`, { cause: err });
      }
      if (got === 0) {
        throw new TensorOpsError(
          'E_FORMAT',
          `'${this.path}' ends at byte ${offset + done} (it shrank while read); ${what} needs ${offset + length}`,
        );
      }
      done += got;
    }
    return out;
  }

  async close(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
  }
}
