// Bytes and text: GPT-2's byte-level alphabet (each of the 256 byte values stands for one
// printable code point, so byte-level BPE vocabularies are strings), UTF-8 conversion, and the
// streaming text decoder generation uses (a token that ends inside a UTF-8 sequence holds its
// bytes until the sequence completes).

/** GPT-2's byte -> character table: printable Latin-1 bytes stand for themselves, the other 68 for U+0100 on. */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const table: string[] = new Array(256);
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 0x100;
  for (let b = 0; b < 256; b++) table[b] = String.fromCharCode(printable(b) ? b : next++);
  return table;
})();

/** The inverse: character code -> byte value, or -1 for a character outside the alphabet. */
export const CHAR_TO_BYTE: Int16Array = (() => {
  const table = new Int16Array(0x144).fill(-1);
  BYTE_TO_CHAR.forEach((ch, b) => { table[ch.charCodeAt(0)] = b; });
  return table;
})();

const encoder = new TextEncoder();

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Decodes UTF-8 (invalid sequences become U+FFFD). */
export function fromUtf8(bytes: Uint8Array): string {
  return new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
}

/** A string's UTF-8 bytes written in GPT-2's byte alphabet. */
export function byteEncode(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) { out += BYTE_TO_CHAR[c]; continue; }
    if (c < 0x800) { out += BYTE_TO_CHAR[0xc0 | (c >> 6)] + BYTE_TO_CHAR[0x80 | (c & 0x3f)]; continue; }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        out += BYTE_TO_CHAR[0xf0 | (c >> 18)] + BYTE_TO_CHAR[0x80 | ((c >> 12) & 0x3f)]
          + BYTE_TO_CHAR[0x80 | ((c >> 6) & 0x3f)] + BYTE_TO_CHAR[0x80 | (c & 0x3f)];
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;  // a lone surrogate: U+FFFD, as UTF-8 conversion writes it
    out += BYTE_TO_CHAR[0xe0 | (c >> 12)] + BYTE_TO_CHAR[0x80 | ((c >> 6) & 0x3f)] + BYTE_TO_CHAR[0x80 | (c & 0x3f)];
  }
  return out;
}

/** Growable byte buffer for decoding. */
export class ByteBuilder {
  #buf = new Uint8Array(256);
  length = 0;
  #reserve(n: number): void {
    if (this.length + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.length));
    this.#buf = next;
  }
  push(bytes: Uint8Array): void {
    this.#reserve(bytes.length);
    this.#buf.set(bytes, this.length);
    this.length += bytes.length;
  }
  pushByte(b: number): void {
    this.#reserve(1);
    this.#buf[this.length++] = b;
  }
  bytes(): Uint8Array {
    return this.#buf.subarray(0, this.length);
  }
}

/**
 * Decodes a stream of byte chunks to text. `push` returns the text complete so far; the bytes of
 * a UTF-8 sequence split across chunks wait for the rest. `flush` ends the stream (a sequence
 * left unfinished reads as U+FFFD).
 */
export class Utf8Stream {
  #decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  push(bytes: Uint8Array): string {
    return this.#decoder.decode(bytes, { stream: true });
  }
  flush(): string {
    return this.#decoder.decode();
  }
}
