// What the chat view shows below the conversation, driven by the sidecar's
// structured notifications: the prompts sent from this window until the
// conversation document shows them, permission requests with their buttons,
// the agent's edits with "Review diff", and this window's own notes (queued,
// not sent). The conversation itself is the conversation document
// (conversation.ts). Pure (no `vscode`), unit-tested in node.
import { escapeHtml } from './conversation';
import { toolCallDiffs, type FileDiff } from './proposals';
import type { PermissionOption, PermissionParams, SessionUpdateParams } from './protocol';

/** The most permission cards, edits and notes kept (the oldest go first). */
export const MAX_CARDS = 50;

export interface PendingPrompt {
  id: number;
  text: string;
  turnId: string | undefined;
  /** Queue position when the sidecar admitted it behind another turn. */
  position: number;
}

export interface PermissionCard {
  requestId: string;
  title: string;
  toolCallId: string | undefined;
  options: PermissionOption[];
  pending: boolean;
  answer: string | undefined;
  diffs: FileDiff[];
}

export interface EditCard {
  toolCallId: string;
  title: string;
  diffs: FileDiff[];
}

export interface Note {
  text: string;
  level: 'info' | 'warning' | 'error';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function bounded<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_CARDS) {
    const first = map.keys().next();
    if (first.done) {
      break;
    }
    map.delete(first.value);
  }
}

export class LiveArea {
  private counter = 0;
  readonly prompts: PendingPrompt[] = [];
  readonly permissions = new Map<string, PermissionCard>();
  readonly edits = new Map<string, EditCard>();
  notes: Note[] = [];
  sessionId: string | null = null;

  /** Another session: nothing of the last one's stays. */
  reset(sessionId: string | null): void {
    this.prompts.length = 0;
    this.permissions.clear();
    this.edits.clear();
    this.notes = [];
    this.sessionId = sessionId;
  }

  /** A prompt typed here: shown at once, until the conversation document shows it. Last turn's cards go. */
  sent(text: string): PendingPrompt {
    for (const [id, card] of this.permissions) {
      if (!card.pending) {
        this.permissions.delete(id);
      }
    }
    this.edits.clear();
    this.notes = [];
    this.counter += 1;
    const prompt: PendingPrompt = { id: this.counter, text, turnId: undefined, position: 0 };
    this.prompts.push(prompt);
    return prompt;
  }

  /** The sidecar admitted the prompt (turn id, queue position) or refused it (error). */
  answered(prompt: PendingPrompt, turnId: string | undefined, position: number, error?: string): void {
    if (turnId === undefined) {
      this.drop(prompt);
      this.note(`Not sent: ${error ?? 'unknown error'}`, 'error');
      return;
    }
    prompt.turnId = turnId;
    prompt.position = position;
  }

  /** The conversation document now holds what was sent for these turns (running or ended). */
  shown(turnIds: ReadonlySet<string>): boolean {
    const before = this.prompts.length;
    for (const p of [...this.prompts]) {
      if (p.turnId !== undefined && turnIds.has(p.turnId)) {
        this.drop(p);
      }
    }
    return this.prompts.length !== before;
  }

  private drop(prompt: PendingPrompt): void {
    const i = this.prompts.indexOf(prompt);
    if (i >= 0) {
      this.prompts.splice(i, 1);
    }
  }

  note(text: string, level: Note['level']): void {
    this.notes.push({ text, level });
    if (this.notes.length > MAX_CARDS) {
      this.notes.shift();
    }
  }

  /** A live tool call with diffs (the sidecar sends `proposals` with those): it can be reviewed. */
  update(p: SessionUpdateParams): boolean {
    const u = isRecord(p.update) ? p.update : {};
    const toolCallId = typeof u.toolCallId === 'string' ? u.toolCallId : undefined;
    if (p.replay || p.proposals === undefined || toolCallId === undefined) {
      return false;
    }
    const diffs = toolCallDiffs(u.content);
    const known = this.edits.get(toolCallId);
    const title = typeof u.title === 'string' ? u.title : (known?.title ?? 'Edit');
    if (diffs.length === 0 && !known) {
      return false;
    }
    bounded(this.edits, toolCallId, { toolCallId, title, diffs: diffs.length > 0 ? diffs : (known?.diffs ?? []) });
    return true;
  }

  /** The diffs of a tool call seen here. */
  diffsOf(toolCallId: string): FileDiff[] {
    return this.edits.get(toolCallId)?.diffs ?? [];
  }

  /** An acp/permission, pending or resolved. */
  permission(p: PermissionParams): void {
    const requestId = String(p.requestId);
    const existing = this.permissions.get(requestId);
    if (p.state === 'resolved') {
      if (existing) {
        existing.pending = false;
        const chosen = existing.options.find((o) => o.optionId === p.outcome?.optionId);
        existing.answer = p.outcome?.outcome === 'selected' ? (chosen?.name ?? String(p.outcome.optionId)) : 'cancelled';
      }
      return;
    }
    const toolCall = isRecord(p.toolCall) ? p.toolCall : {};
    const toolCallId = typeof toolCall.toolCallId === 'string' ? toolCall.toolCallId : undefined;
    let diffs = toolCallDiffs(toolCall.content);
    if (diffs.length === 0 && toolCallId) {
      diffs = this.diffsOf(toolCallId);
    }
    const known = toolCallId ? this.edits.get(toolCallId) : undefined;
    const title = typeof toolCall.title === 'string' ? toolCall.title : (known?.title ?? 'a tool call');
    const options = (Array.isArray(p.options) ? p.options : []).filter(
      (o): o is PermissionOption => isRecord(o) && typeof o.optionId === 'string' && typeof o.name === 'string',
    );
    bounded(this.permissions, requestId, { requestId, title, toolCallId, options, pending: true, answer: undefined, diffs });
  }

  pendingPermissions(): PermissionCard[] {
    return [...this.permissions.values()].filter((c) => c.pending);
  }

  /** The live area as HTML (every text escaped). `showPath`: a path as the user reads it. */
  html(showPath: (path: string) => string = (p) => p): string {
    const out: string[] = [];
    for (const p of this.prompts) {
      const queued = p.position > 0 ? `<div class="note info">Queued (position ${p.position}).</div>` : '';
      out.push(`<div class="msg user pending"><div class="who">You</div><div class="body plain">${escapeHtml(p.text)}</div>${queued}</div>`);
    }
    const withCard = new Set([...this.permissions.values()].map((c) => c.toolCallId));
    for (const e of this.edits.values()) {
      if (!withCard.has(e.toolCallId)) {
        out.push(
          `<div class="tool"><span class="title">${escapeHtml(e.title)}</span>` +
            files(`edit:${e.toolCallId}`, e.diffs, showPath) +
            '</div>',
        );
      }
    }
    for (const c of this.permissions.values()) {
      const head = `<div class="who">Permission</div><div class="ask">The agent asks to run: <b>${escapeHtml(c.title)}</b></div>`;
      if (!c.pending) {
        out.push(`<div class="permission resolved">${head}<div class="answer">Answered: ${escapeHtml(c.answer ?? '')}</div></div>`);
        continue;
      }
      const options = c.options
        .map((o) => button(o.name, { action: 'respond', request: c.requestId, option: o.optionId }, o.kind.startsWith('reject') ? 'secondary' : ''))
        .join(' ');
      out.push(`<div class="permission pending">${head}${files(`permission:${c.requestId}`, c.diffs, showPath)}<div class="options">${options}</div></div>`);
    }
    for (const n of this.notes) {
      out.push(`<div class="note ${n.level}">${escapeHtml(n.text)}</div>`);
    }
    return out.join('');
  }
}

function button(label: string, data: Record<string, string>, cls = ''): string {
  const attrs = Object.entries(data)
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  return `<button class="${escapeHtml(cls)}"${attrs}>${escapeHtml(label)}</button>`;
}

/** One line per file, each with its "Review diff" button (`card`: what the review is of). */
function files(card: string, diffs: FileDiff[], showPath: (path: string) => string): string {
  return diffs
    .map(
      (d, index) =>
        `<div class="diff"><span class="path" title="${escapeHtml(d.path)}">${escapeHtml(showPath(d.path))}</span> ` +
        button('Review diff', { action: 'review', card, index: String(index) }) +
        '</div>',
    )
    .join('');
}
