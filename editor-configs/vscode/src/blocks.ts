// The conversation document read piece by piece: its conversation cut into turns (at the
// sidecar's `## You` / `## Agent` headings) and each turn into blocks, at boundaries where
// rendering the blocks one by one gives what rendering the turn whole would (a blank line
// outside a code block, before an unindented line that is not a list item). A growing answer
// therefore costs what it adds: finished blocks keep their HTML, only the open one (the last)
// is rendered again. Pure (no `vscode`): unit-tested in node.
//
// The document is read from a point the parser *committed* to: the line before the last
// non-blank line above the prompt area, before which every line is final while the file is the
// same file (docs/protocol.md, "Reading the file while it is written": the last non-blank line
// may be a provisional fence closing a code block still streaming, the one before it a line
// still being written).

/** The start of the prompt area (docs/protocol.md): the conversation ends before the last one. */
const PROMPT_AREA = /^---\n\n## Your prompt\n/gm;
/** The sidecar's own comment lines (identity, prompt marker): structure, not conversation. */
const MARKER_LINE = /^<!-- acp-sidecar.*-->$/;
/** The document's header: its title line and identity comment (the view's header shows the title). */
const HEADER = /^# [^\n]*\n<!-- acp-sidecar transcript[^\n]*-->\n/;
/** A fence line at the top level (the sidecar escapes any other that could open one). */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
/** A list item's first line: a block boundary before it would split one list in two. */
const LIST_ITEM = /^([-+*]|\d{1,9}[.)])([ \t]|$)/;
const HEADINGS = new Set(['## You', '## Agent']);

export type Kind = 'you' | 'agent' | 'other';

function kindOfHeading(line: string): Kind {
  return line === '## You' ? 'you' : line === '## Agent' ? 'agent' : 'other';
}

/** One finished block: its Markdown, and its HTML once rendered. */
interface Block {
  md: string;
  html: string | undefined;
}

interface Turn {
  kind: Kind;
  blocks: Block[];
}

/** Where the line parser is: enough to go on from the start of any line. */
interface Cursor {
  fence: string | undefined;
  afterBlank: boolean;
  /** A line of conversation was seen (the blank lines before the first one are dropped). */
  started: boolean;
  /** The Markdown of the open block (the last one of the last turn). */
  open: string;
}

/** A turn as shown: its kind and its blocks' HTML. */
export interface TurnView {
  kind: Kind;
  /** How many of its first blocks are finished for good (their HTML never changes). */
  fixed: number;
  html(index: number): string;
  /** The Markdown of block `index` (the turn's text is theirs joined). */
  markdown(index: number): string;
  count: number;
}

/** The document's conversation, parsed incrementally; `feed` takes the text from the commit point on. */
export class ConversationBlocks {
  private turns: Turn[] = [];
  private cursor: Cursor = { fence: undefined, afterBlank: true, started: false, open: '' };
  /** What is after the commit point now: extra finished blocks, extra turns, the open block. */
  private tentative: { extra: Block[]; more: Turn[]; open: string } = { extra: [], more: [], open: '' };
  /** HTML by Markdown of the blocks seen (kept across a reset: a rewritten document renders nothing twice). */
  private cache = new Map<string, string>();

  constructor(private readonly render: (markdown: string) => string) {}

  /**
   * The document's text from the commit point on (`reset`: the whole document). Returns how many
   * characters of `text` are now committed: the next call starts there.
   */
  feed(text: string, reset: boolean): number {
    let offset = 0;
    this.reuse = undefined;
    if (reset) {
      this.reuse = this.cache;
      this.cache = new Map();
      this.turns = [];
      this.cursor = { fence: undefined, afterBlank: true, started: false, open: '' };
      const header = HEADER.exec(text);
      offset = header ? header[0].length : 0;
    }
    // The conversation ends where the last prompt area starts; without one, nothing is committed.
    let end = -1;
    PROMPT_AREA.lastIndex = offset;
    for (let m = PROMPT_AREA.exec(text); m; m = PROMPT_AREA.exec(text)) {
      end = m.index;
    }
    const body = end >= 0 ? text.slice(offset, end) : text.slice(offset);
    const lines = body.split('\n');
    const last = lines.length - 1; // `lines[last]` has no newline after it ('' when the body ends with one)
    // Final: every line before the one before the last non-blank line (that line may still grow,
    // or be the sidecar's provisional closing fence; the line before it may be the growing one).
    let commit = 0;
    if (end >= 0) {
      let lastText = last;
      while (lastText >= 0 && lines[lastText].trim() === '') {
        lastText -= 1;
      }
      commit = Math.max(0, lastText - 1);
    }
    let consumed = offset;
    for (let i = 0; i < commit; i++) {
      this.line(this.cursor, lines[i], true, undefined);
      consumed += lines[i].length + 1;
    }
    const cursor = { ...this.cursor };
    const tentative = { extra: [] as Block[], more: [] as Turn[], open: '' };
    for (let i = commit; i <= last; i++) {
      if (i === last && lines[i] === '') {
        break;
      }
      this.line(cursor, lines[i], i !== last, tentative);
    }
    tentative.open = cursor.open;
    this.tentative = tentative;
    return consumed;
  }

  /** After a reset, until the next feed: the HTML of the blocks seen before it. */
  private reuse: Map<string, string> | undefined;

  private line(
    c: Cursor,
    line: string,
    newline: boolean,
    tentative: { extra: Block[]; more: Turn[]; open: string } | undefined,
  ): void {
    if (MARKER_LINE.test(line)) {
      return; // removed with its line break, as if it were not there
    }
    if (!c.started && line === '') {
      return;
    }
    c.started = true;
    const m = FENCE.exec(line);
    let newTurn = false;
    let newBlock = false;
    if (c.fence !== undefined) {
      if (m && m[1][0] === c.fence[0] && m[1].length >= c.fence.length && m[2].trim() === '') {
        c.fence = undefined;
      }
    } else {
      if (c.afterBlank && c.open !== '' && HEADINGS.has(line)) {
        newTurn = true;
      } else if (c.afterBlank && c.open !== '' && /^\S/.test(line) && !LIST_ITEM.test(line)) {
        newBlock = true;
      }
      if (m && !(m[1][0] === '`' && m[2].includes('`'))) {
        c.fence = m[1];
      }
    }
    const turns = this.turns;
    if (newTurn || newBlock || (turns.length === 0 && (!tentative || tentative.more.length === 0))) {
      if (c.open !== '') {
        const block: Block = { md: c.open, html: undefined };
        if (tentative) {
          (tentative.more.length > 0 ? tentative.more[tentative.more.length - 1].blocks : tentative.extra).push(block);
        } else {
          turns[turns.length - 1].blocks.push(block);
        }
      }
      c.open = '';
      if (newTurn || (turns.length === 0 && (!tentative || tentative.more.length === 0))) {
        const turn: Turn = { kind: kindOfHeading(line), blocks: [] };
        if (tentative) {
          tentative.more.push(turn);
        } else {
          turns.push(turn);
        }
      }
    }
    c.open += newline ? line + '\n' : line;
    c.afterBlank = line.trim() === '';
  }

  private html(block: Block): string {
    if (block.html === undefined) {
      block.html = this.cache.get(block.md) ?? this.reuse?.get(block.md) ?? this.render(block.md);
      this.cache.set(block.md, block.html);
    }
    return block.html;
  }

  /** How many turns are final up to the commit point (the last of them may still grow). */
  get committedTurns(): number {
    return this.turns.length;
  }

  /** How many turns there are now. */
  get count(): number {
    const t = this.tentative;
    return this.turns.length + t.more.length;
  }

  /** Turn `index` as shown now. */
  turn(index: number): TurnView {
    const t = this.tentative;
    const committed = this.turns.length;
    const lastCommitted = index === committed - 1;
    const own: Block[] = index < committed ? this.turns[index].blocks : t.more[index - committed].blocks;
    const kind = index < committed ? this.turns[index].kind : t.more[index - committed].kind;
    const extra: Block[] = lastCommitted ? t.extra : [];
    const isLast = index === this.count - 1;
    const openHtml = isLast && t.open !== '' ? [t.open] : [];
    const count = own.length + extra.length + openHtml.length;
    const fixed = index < committed ? own.length : 0;
    return {
      kind,
      fixed,
      count,
      html: (i: number): string => {
        if (i < own.length) {
          return this.html(own[i]);
        }
        if (i < own.length + extra.length) {
          return this.html(extra[i - own.length]);
        }
        return this.render(openHtml[0]);
      },
      markdown: (i: number): string =>
        i < own.length ? own[i].md : i < own.length + extra.length ? extra[i - own.length].md : openHtml[0],
    };
  }
}
