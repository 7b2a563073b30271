// The conversation as the chat view shows it: the session's transcript document
// (docs/protocol.md, "Transcript documents"), which the sidecar writes and keeps
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

/** The start of the prompt area (docs/protocol.md): the conversation ends before the last one. */
const PROMPT_AREA = /\n---\n\n## Your prompt\n/g;
/** The sidecar's own comment lines (identity, prompt marker): structure, not conversation. */
const MARKER_LINE = /^<!-- acp-sidecar[^\n]*-->\n?/gm;
/** The document's header: its title line and identity comment (the view's header shows the title). */
const HEADER = /^# [^\n]*\n<!-- acp-sidecar transcript[^\n]*-->\n/;
/** A fence line at the top level (the sidecar escapes any other that could open one). */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADINGS = new Set(['## You', '## Agent']);

/** The conversation of a transcript document: without its header, prompt area and marker comments. */
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

export interface Part {
  index: number;
  /** `you`, `agent`, or `other` (what comes before the first turn: a trim note). */
  kind: 'you' | 'agent' | 'other';
  html: string;
}

function kindOf(text: string): Part['kind'] {
  return text.startsWith('## You\n') ? 'you' : text.startsWith('## Agent\n') ? 'agent' : 'other';
}

/** The rendered turns of one document; `update` renders only the turns whose text changed. */
export class RenderedConversation {
  private texts: string[] = [];
  /** The HTML of each turn shown, by its text (a turn that moved is not rendered again). */
  private html = new Map<string, string>();

  private render(text: string): string {
    return this.html.get(text) ?? renderMarkdown(text);
  }

  /** The parts that changed (index, html) and how many parts there are now. */
  update(document: string): { count: number; changed: Part[] } {
    const texts = splitTurns(conversationOf(document));
    const html = new Map<string, string>();
    const changed: Part[] = [];
    texts.forEach((text, index) => {
      const rendered = this.render(text);
      html.set(text, rendered);
      if (this.texts[index] !== text) {
        changed.push({ index, kind: kindOf(text), html: rendered });
      }
    });
    this.texts = texts;
    this.html = html;
    return { count: texts.length, changed };
  }

  /** Every part again (a webview that was hidden and comes back). */
  all(): Part[] {
    return this.texts.map((text, index) => ({ index, kind: kindOf(text), html: this.render(text) }));
  }

  clear(): void {
    this.texts = [];
    this.html.clear();
  }
}
