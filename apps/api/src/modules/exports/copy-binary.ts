/**
 * Frames the rows of a one-column `COPY ... TO STDOUT (FORMAT binary)` stream: the file header
 * (11-byte signature, flags, header extension), then per row a 16-bit field count, a 32-bit
 * length and the value's bytes, then a field count of -1. Chunks may split anything anywhere;
 * a value wholly inside a chunk is handed on as a view of it (no copy), a split one is gathered.
 */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

export class CopyBinaryRows {
  #pending: Buffer = Buffer.alloc(0);
  #headerDone = false;
  #ended = false;

  /** True once the trailer has been read. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Calls `onRow` with each complete value of `chunk` (and of what earlier chunks left). */
  push(chunk: Buffer, onRow: (value: Buffer) => void): void {
    const buf = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    let at = 0;
    if (!this.#headerDone) {
      if (buf.length < 19) {
        this.#pending = Buffer.from(buf);
        return;
      }
      if (!buf.subarray(0, 11).equals(SIGNATURE)) {
        throw new Error('not a binary COPY stream');
      }
      const extension = buf.readUInt32BE(15);
      if (buf.length < 19 + extension) {
        this.#pending = Buffer.from(buf);
        return;
      }
      at = 19 + extension;
      this.#headerDone = true;
    }
    while (!this.#ended) {
      if (buf.length - at < 2) {
        break;
      }
      const fields = buf.readInt16BE(at);
      if (fields === -1) {
        this.#ended = true;
        at += 2;
        break;
      }
      if (fields !== 1) {
        throw new Error(`expected one column per row, got ${fields}`);
      }
      if (buf.length - at < 6) {
        break;
      }
      const length = buf.readInt32BE(at + 2);
      if (length < 0) {
        throw new Error('a NULL row value');
      }
      if (buf.length - at < 6 + length) {
        break;
      }
      onRow(buf.subarray(at + 6, at + 6 + length));
      at += 6 + length;
    }
    // What is left is the start of the next row: kept (copied, so the chunk can go).
    this.#pending = at < buf.length ? Buffer.from(buf.subarray(at)) : Buffer.alloc(0);
  }
}
