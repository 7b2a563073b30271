// Reads the conversation file the chat shows, as little of it as it can: after a first whole read,
// only what follows the point the chat's parser committed to (blocks.ts), as long as the file is
// the same file (device and inode) and still has, just before that point, the bytes it had. How
// the sidecar writes the file, and so why that is safe: docs/protocol.md, "Reading the file while
// it is written". No `vscode`: unit-tested in node.
import * as fs from 'node:fs';

/** The most of a conversation file the chat reads (its end): the document has it all. */
export const MAX_BYTES = 2 * 1024 * 1024;
const CUT_STEP = 256 * 1024;
/** The bytes before the commit point that must be unchanged for a read to go on from there. */
const WINDOW = 64;
export const EARLIER_NOTE =
  '_… Earlier turns are in the conversation document ("ACP: Open the session transcript document")._\n\n';

/** Where a file of `size` bytes is read from: 0, or (over MAX_BYTES) a multiple of CUT_STEP, so
 * that the cut moves only now and then. */
function cutOf(size: number): number {
  return size <= MAX_BYTES ? 0 : Math.ceil((size - MAX_BYTES) / CUT_STEP) * CUT_STEP;
}

export interface Piece {
  /** The document's text from the commit point on, or the whole document (`reset`). */
  text: string;
  reset: boolean;
  /** The file's size now (bytes). */
  size: number;
}

interface Position {
  ino: number;
  dev: number;
  cut: number;
  /** Byte offset in the file of the commit point. */
  commit: number;
  /** The bytes just before it. */
  window: Buffer;
}

export class ConversationFileReader {
  private at: Position | undefined;
  /** The last piece: its file, and the byte offset of its text's first character (undefined: not
   * in the file), after `note` characters that are not in the file (never committed). */
  private last: { ino: number; dev: number; cut: number; start: number | undefined; note: number } | undefined;

  constructor(readonly file: string) {}

  /** The next piece (throws when the file cannot be read). */
  async read(): Promise<Piece> {
    const handle = await fs.promises.open(this.file, 'r');
    try {
      const info = await handle.stat();
      const size = info.size;
      const cut = cutOf(size);
      const at = this.at;
      if (at && at.ino === info.ino && at.dev === info.dev && at.cut === cut && at.commit <= size) {
        const from = at.commit - at.window.length;
        const buffer = Buffer.alloc(size - from);
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, from);
        if (bytesRead === buffer.length && buffer.subarray(0, at.window.length).equals(at.window)) {
          this.last = { ino: at.ino, dev: at.dev, cut, start: at.commit, note: 0 };
          return { text: buffer.subarray(at.window.length).toString('utf8'), reset: false, size };
        }
      }
      this.at = undefined;
      if (cut === 0) {
        const text = (await handle.readFile()).toString('utf8');
        this.last = { ino: info.ino, dev: info.dev, cut, start: 0, note: 0 };
        return { text, reset: true, size };
      }
      const buffer = Buffer.alloc(size - cut);
      const { bytesRead } = await handle.read(buffer, 0, size - cut, cut);
      const text = buffer.subarray(0, bytesRead).toString('utf8');
      const turn = text.search(/\n\n## (You|Agent)\n/);
      if (turn < 0) {
        this.last = { ino: info.ino, dev: info.dev, cut, start: undefined, note: 0 };
        return { text: EARLIER_NOTE, reset: true, size };
      }
      const start = cut + Buffer.byteLength(text.slice(0, turn + 2), 'utf8');
      this.last = { ino: info.ino, dev: info.dev, cut, start, note: EARLIER_NOTE.length };
      return { text: EARLIER_NOTE + text.slice(turn + 2), reset: true, size };
    } finally {
      await handle.close();
    }
  }

  /** The parser committed the first `chars` characters of the last piece's `text`. */
  committed(text: string, chars: number): void {
    const last = this.last;
    if (!last || last.start === undefined || chars < last.note) {
      this.at = undefined; // nothing to go on from: the next read is whole
      return;
    }
    const added = Buffer.from(text.slice(last.note, chars), 'utf8');
    const before = this.at && this.at.commit === last.start ? this.at.window : Buffer.alloc(0);
    const joined = added.length >= WINDOW ? added : Buffer.concat([before, added]);
    this.at = {
      ino: last.ino,
      dev: last.dev,
      cut: last.cut,
      commit: last.start + added.length,
      window: joined.subarray(Math.max(0, joined.length - WINDOW)),
    };
  }

  /** Forget the position: the next read is whole. */
  forget(): void {
    this.at = undefined;
  }
}
