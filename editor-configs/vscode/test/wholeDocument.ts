// The test oracle of the chat's conversation: a whole document read the slow, obvious way (its
// conversation cut out, then cut into turns), which the incremental reading the extension does
// (src/blocks.ts, src/conversation.ts) must agree with at every step. Only the tests use it.
import { RenderedConversation } from '../src/conversation';

/** The start of the prompt area (docs/protocol.md): the conversation ends before the last one. */
const PROMPT_AREA = /\n---\n\n## Your prompt\n/g;
/** The sidecar's own comment lines (identity, prompt marker): structure, not conversation. */
const MARKER_LINE = /^<!-- acp-sidecar[^\n]*-->\n?/gm;
/** The document's header: its title line and identity comment (the view's header shows the title). */
const HEADER = /^# [^\n]*\n<!-- acp-sidecar transcript[^\n]*-->\n/;
/** A fence line at the top level (the sidecar escapes any other that could open one). */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADINGS = new Set(['## You', '## Agent']);

/** The conversation of a conversation document: without its header, prompt area and marker comments. */
export function conversationOf(document: string): string {
  let cut = -1;
  for (const m of document.matchAll(PROMPT_AREA)) {
    cut = m.index ?? -1;
  }
  const body = cut >= 0 ? document.slice(0, cut + 1) : document;
  return body.replace(HEADER, '').replace(MARKER_LINE, '').replace(/^\n+/, '');
}

/**
 * The conversation cut before each of the sidecar's turn headings (`## You`, `## Agent` at the
 * start of a line after a blank one, outside a code block): each part is whole Markdown.
 */
export function splitTurns(body: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let pos = 0;
  let fence: string | undefined;
  let afterBlank = true;
  while (pos < body.length) {
    let end = body.indexOf('\n', pos);
    if (end < 0) {
      end = body.length;
    }
    const line = body.slice(pos, end);
    const m = FENCE.exec(line);
    if (fence !== undefined) {
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length && m[2].trim() === '') {
        fence = undefined;
      }
    } else if (m && !(m[1][0] === '`' && m[2].includes('`'))) {
      fence = m[1];
    } else if (afterBlank && pos > start && HEADINGS.has(line)) {
      parts.push(body.slice(start, pos));
      start = pos;
    }
    afterBlank = line.trim() === '';
    pos = end + 1;
  }
  if (start < body.length || parts.length === 0) {
    parts.push(body.slice(start));
  }
  return parts;
}

/** A RenderedConversation that also tells the Markdown its blocks add up to, turn by turn. */
export class InspectedConversation extends RenderedConversation {
  /** The whole document at once: fed whole, then its changes. */
  update(document: string): ReturnType<RenderedConversation['changes']> {
    this.feed(document, true);
    return this.changes();
  }

  /** The Markdown of each turn now (what its blocks add up to). */
  turnsMarkdown(): string[] {
    const out: string[] = [];
    for (let index = 0; index < this.blocks.count; index++) {
      const turn = this.blocks.turn(index);
      let text = '';
      for (let i = 0; i < turn.count; i++) {
        text += turn.markdown(i);
      }
      out.push(text);
    }
    return out;
  }
}
