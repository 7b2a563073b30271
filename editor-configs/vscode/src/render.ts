// Chat items as HTML for the chat webview. Everything from the agent is
// either escaped or rendered by markdown-it with raw HTML off and images off:
// no tag the agent writes ever reaches the page, and nothing remote is loaded.
// (The webview's content security policy forbids inline scripts besides.)
import MarkdownIt from 'markdown-it';
import type { ChatItem, FileDiff, PlanEntry } from './chatModel';

const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });
// Images would load from wherever the agent points; the CSP would block them, the text is better.
md.disable('image');

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Markdown from the agent as HTML (markdown-it escapes any HTML in it and refuses javascript: links). */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

function lines(text: string | null): string[] {
  return text ? text.replace(/\n$/, '').split('\n') : [];
}

/** The length of the longest common subsequence of two line lists (two rows of the table). */
function commonLines(a: string[], b: string[]): number {
  let prev = new Array<number>(b.length + 1).fill(0);
  for (const line of a) {
    const row = new Array<number>(b.length + 1).fill(0);
    for (let j = 0; j < b.length; j++) {
      row[j + 1] = line === b[j] ? prev[j] + 1 : Math.max(prev[j + 1], row[j]);
    }
    prev = row;
  }
  return prev[b.length];
}

/** Lines added and removed (exact for ordinary sizes; a huge change counts its whole changed middle). */
export function diffStats(diff: FileDiff): { added: number; removed: number } {
  const a = lines(diff.oldText);
  const b = lines(diff.newText);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) {
    head += 1;
  }
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) {
    tail += 1;
  }
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const common = midA.length * midB.length <= 4_000_000 ? commonLines(midA, midB) : 0;
  return { added: midB.length - common, removed: midA.length - common };
}

function basename(path: string): string {
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] || path;
}

function button(label: string, data: Record<string, string>, cls = ''): string {
  const attrs = Object.entries(data)
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  return `<button class="${escapeHtml(cls)}"${attrs}>${escapeHtml(label)}</button>`;
}

function diffList(itemId: string, diffs: FileDiff[], withReview: boolean): string {
  return diffs
    .map((d, index) => {
      const { added, removed } = diffStats(d);
      const review = withReview ? ' ' + button('Review diff', { action: 'review', item: itemId, index: String(index) }) : '';
      return (
        `<div class="diff"><span class="path" title="${escapeHtml(d.path)}">${escapeHtml(basename(d.path))}</span>` +
        ` <span class="added">+${added}</span> <span class="removed">−${removed}</span>${review}</div>`
      );
    })
    .join('');
}

const PLAN_MARKS: Record<string, string> = { completed: '☑', in_progress: '◐', pending: '☐' };

function plan(entries: PlanEntry[]): string {
  const rows = entries
    .map((e) => `<li class="${escapeHtml(e.status)}"><span class="mark">${PLAN_MARKS[e.status] ?? '☐'}</span> ${escapeHtml(e.content)}</li>`)
    .join('');
  return `<div class="plan"><div class="who">Plan</div><ul>${rows}</ul></div>`;
}

/** One chat item as HTML; `showPath` turns a file path into what the user reads (e.g. workspace-relative). */
export function renderItem(item: ChatItem, showPath: (path: string) => string = (p) => p): string {
  switch (item.kind) {
    case 'user':
      return `<div class="msg user"><div class="who">You</div><div class="body plain">${escapeHtml(item.text)}</div></div>`;
    case 'agent':
      return `<div class="msg agent"><div class="who">Agent</div><div class="body">${renderMarkdown(item.text)}</div></div>`;
    case 'thought':
      return `<details class="msg thought"><summary>Thinking</summary><div class="body">${renderMarkdown(item.text)}</div></details>`;
    case 'tool': {
      const locations = item.locations.length
        ? `<div class="locations">${item.locations.map((l) => escapeHtml(showPath(l))).join(', ')}</div>`
        : '';
      return (
        `<div class="tool status-${escapeHtml(item.status)}"><span class="kind">${escapeHtml(item.toolKind)}</span> ` +
        `<span class="title">${escapeHtml(item.title)}</span> <span class="status">${escapeHtml(item.status.replace('_', ' '))}</span>` +
        `${locations}${diffList(item.id, item.diffs, true)}</div>`
      );
    }
    case 'plan':
      return plan(item.entries);
    case 'note':
      return `<div class="note ${item.level}">${escapeHtml(item.text)}</div>`;
    case 'history':
      return `<div class="history"><div class="who">Earlier in this session</div><div class="body">${renderMarkdown(item.markdown)}</div></div>`;
    case 'permission': {
      const head = `<div class="who">Permission</div><div class="ask">The agent asks to run: <b>${escapeHtml(item.title)}</b></div>`;
      if (!item.pending) {
        return `<div class="permission resolved">${head}<div class="answer">Answered: ${escapeHtml(item.answer ?? '')}</div></div>`;
      }
      const options = item.options
        .map((o) => button(o.name, { action: 'respond', request: item.requestId, option: o.optionId }, o.kind.startsWith('reject') ? 'secondary' : ''))
        .join(' ');
      return `<div class="permission pending">${head}${diffList(item.id, item.diffs, true)}<div class="options">${options}</div></div>`;
    }
  }
}
