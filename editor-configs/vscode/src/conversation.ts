// The conversation as the chat view shows it: the session's conversation document
// (docs/protocol.md, "Conversation documents"), which the sidecar writes and keeps
// live in the open document, rendered as Markdown. The sidecar decides what the
// conversation holds (notices, plans, tool calls, diffs, the user's prompts and
// the agent's echo of them); this only cuts the document into its turns, so a
// streamed answer re-renders its own turn and nothing before it. Pure (no
// `vscode`): unit-tested in node.
//
// Everything from the agent reaches the page through markdown-it with raw HTML
// off and images off: no tag the agent writes becomes an element, nothing remote
// loads (the webview's content security policy forbids inline scripts besides).
import MarkdownIt from 'markdown-it';
import { ConversationBlocks, type Kind } from './blocks';

const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });
md.disable('image');

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

const DIFF_LINES: Array<[RegExp, string]> = [
  [/^(\+\+\+|---) /, 'file'],
  [/^\+/, 'add'],
  [/^-/, 'del'],
  [/^@@/, 'hunk'],
];

// A ```diff block (the sidecar shows a tool call's diffs so) with its lines coloured.
const fence = md.renderer.rules.fence;
md.renderer.rules.fence = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  if (token.info.trim() !== 'diff' || !fence) {
    return fence ? fence(tokens, idx, options, env, self) : '';
  }
  const lines = token.content.replace(/\n$/, '').split('\n').map((line) => {
    const kind = DIFF_LINES.find(([re]) => re.test(line))?.[1];
    return kind ? `<span class="${kind}">${escapeHtml(line)}</span>` : escapeHtml(line);
  });
  return `<pre class="diff"><code>${lines.join('\n')}\n</code></pre>\n`;
};

/** Markdown as HTML (markdown-it escapes any HTML in it and refuses javascript: links); a plan's
 * `- [x]` / `- [ ]` items as ticked and open boxes. */
export function renderMarkdown(text: string): string {
  return md
    .render(text)
    .replace(/<li>\[x\] /g, '<li class="task done">☑ ')
    .replace(/<li>\[ \] /g, '<li class="task">☐ ');
}

export interface Part {
  index: number;
  /** `you`, `agent`, or `other` (what comes before the first turn: a trim note). */
  kind: Kind;
  /** The turn's blocks from this one on are `blocks` (the ones before it stay). */
  from: number;
  blocks: string[];
}

/**
 * The rendered turns of one document, fed as it grows (`feed`) or whole (`update`): each change
 * names, per turn, the first block that changed and the blocks from there on. What the webview
 * shows is mirrored here, so that a change is what differs from it.
 */
export class RenderedConversation {
  /** Protected: the tests read the Markdown its blocks add up to (test/wholeDocument.ts). */
  protected blocks = new ConversationBlocks(renderMarkdown);
  /** The HTML of each block of each turn, as the webview has it. */
  private shown: string[][] = [];
  /** Per turn, how many of its blocks were final at the last change (they cannot have changed since). */
  private fixed: number[] = [];

  /** Turns to diff at the next `changes`: from the first, or all of them after a reset. */
  private reset = false;

  /**
   * The document from the last commit point on (`reset`: whole). Returns how many characters of
   * `text` are committed (the next feed starts after them). Nothing is rendered yet (`changes`).
   */
  feed(text: string, reset: boolean): number {
    this.reset ||= reset;
    return this.blocks.feed(text, reset);
  }

  /** What changed since the last call (rendered): per turn, its blocks from the first that changed. */
  changes(): { count: number; changed: Part[] } {
    const reset = this.reset;
    this.reset = false;
    const before = this.fixed.length;
    const count = this.blocks.count;
    // Turns before the last one that was final at the last change are final, and unchanged.
    const first = reset ? 0 : Math.max(0, Math.min(before, this.lastFixedTurn));
    const changed: Part[] = [];
    this.shown.length = Math.min(this.shown.length, count);
    this.fixed.length = Math.min(this.fixed.length, count);
    for (let index = first; index < count; index++) {
      const turn = this.blocks.turn(index);
      const shown = (this.shown[index] ??= []);
      let from = reset ? 0 : Math.min(this.fixed[index] ?? 0, turn.fixed, shown.length);
      const blocks: string[] = [];
      for (let i = from; i < turn.count; i++) {
        const html = turn.html(i);
        if (blocks.length === 0 && i < shown.length && shown[i] === html) {
          from = i + 1;
          continue;
        }
        blocks.push(html);
      }
      if (blocks.length > 0 || shown.length !== turn.count) {
        shown.length = from;
        shown.push(...blocks);
        changed.push({ index, kind: turn.kind, from, blocks });
      }
      this.fixed[index] = turn.fixed;
    }
    this.lastFixedTurn = this.blocks.committedTurns - 1;
    return { count, changed };
  }

  private lastFixedTurn = 0;

  /** Every part again (a webview that was hidden and comes back). */
  all(): Part[] {
    const parts: Part[] = [];
    for (let index = 0; index < this.blocks.count; index++) {
      const turn = this.blocks.turn(index);
      const blocks: string[] = [];
      for (let i = 0; i < turn.count; i++) {
        blocks.push(turn.html(i));
      }
      this.shown[index] = [...blocks];
      parts.push({ index, kind: turn.kind, from: 0, blocks });
    }
    return parts;
  }

  clear(): void {
    this.blocks = new ConversationBlocks(renderMarkdown);
    this.shown = [];
    this.fixed = [];
    this.lastFixedTurn = 0;
    this.reset = false;
  }
}
