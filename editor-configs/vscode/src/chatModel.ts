// The conversation of the active session as the chat view shows it, built
// from acp/sessionUpdate, acp/turn and acp/permission. Pure (no `vscode`), so
// the rules (chunks joined, tool calls merged, replay vs. stored history,
// echoed prompts) are unit-tested in node.
import type {
  PermissionOption,
  PermissionParams,
  PromptResult,
  SessionUpdateParams,
  TurnParams,
} from './protocol';

/** One file change of a tool call (ACP `diff` content): whole-file texts. */
export interface FileDiff {
  path: string;
  oldText: string | null;
  newText: string;
}

export interface PlanEntry {
  content: string;
  status: string;
}

export type ChatItem =
  | { id: string; kind: 'user'; text: string }
  | { id: string; kind: 'agent' | 'thought'; text: string }
  | {
      id: string;
      kind: 'tool';
      toolCallId: string;
      title: string;
      toolKind: string;
      status: string;
      diffs: FileDiff[];
      locations: string[];
    }
  | { id: string; kind: 'plan'; entries: PlanEntry[] }
  | { id: string; kind: 'note'; text: string; level: 'info' | 'warning' | 'error' }
  | { id: string; kind: 'history'; markdown: string }
  | {
      id: string;
      kind: 'permission';
      requestId: string;
      title: string;
      toolCallId: string | undefined;
      options: PermissionOption[];
      pending: boolean;
      answer: string | undefined;
      diffs: FileDiff[];
    };

/** The most items kept: a long session's oldest items are dropped first. */
export const MAX_ITEMS = 3000;
/** The most text one message keeps (its end): a flood stays cheap to render; the transcript has it all. */
export const MAX_MESSAGE_CHARS = 200_000;
const CUT_MARK = '…\n\n';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
}

/** The `diff` blocks of a tool call's content. */
export function toolCallDiffs(content: unknown): FileDiff[] {
  if (!Array.isArray(content)) {
    return [];
  }
  const out: FileDiff[] = [];
  for (const c of content) {
    if (isRecord(c) && c.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string') {
      out.push({ path: c.path, oldText: typeof c.oldText === 'string' ? c.oldText : null, newText: c.newText });
    }
  }
  return out;
}

/** The text of a content block, as a short marker for what is not text. */
export function contentText(content: unknown): string {
  if (!isRecord(content)) {
    return '';
  }
  switch (content.type) {
    case 'text':
      return typeof content.text === 'string' ? content.text : '';
    case 'resource_link':
      return `[${String(content.name ?? content.uri)}](${String(content.uri)})`;
    case 'resource':
      return isRecord(content.resource) ? `(attached: ${String(content.resource.uri)})` : '';
    case 'image':
      return '(image)';
    case 'audio':
      return '(audio)';
    default:
      return '';
  }
}

const CHUNK_KINDS: Record<string, 'user' | 'agent' | 'thought'> = {
  user_message_chunk: 'user',
  agent_message_chunk: 'agent',
  agent_thought_chunk: 'thought',
};

export class ChatModel {
  private items = new Map<string, ChatItem>();
  private counter = 0;
  /** The message chunks continue (kind and key), until any other item is added. */
  private open: { kind: string; key: string; id: string } | undefined;
  /** Prompts sent from this window whose turn id is not known yet. */
  private inflight = 0;
  /** Turns started from this window: the agent's echo of the prompt is not shown twice. */
  private readonly ownTurns = new Set<string>();
  private readonly runningTurns = new Set<string>();
  sessionId: string | null = null;
  /** True when the session's stored transcript is shown: replayed updates are then duplicates. */
  historyShown = false;

  /** Starts over for another session. */
  reset(sessionId: string | null): void {
    this.items.clear();
    this.open = undefined;
    this.ownTurns.clear();
    this.runningTurns.clear();
    this.sessionId = sessionId;
    this.historyShown = false;
  }

  all(): ChatItem[] {
    return [...this.items.values()];
  }

  get(id: string): ChatItem | undefined {
    return this.items.get(id);
  }

  get running(): boolean {
    return this.runningTurns.size > 0 || this.inflight > 0;
  }

  /** The stored conversation (the transcript document without its prompt area), shown first. */
  setHistory(markdown: string): string[] {
    const id = 'history';
    this.items.delete(id);
    const rest = [...this.items.entries()];
    this.items = new Map([[id, { id, kind: 'history', markdown }], ...rest]);
    this.historyShown = true;
    return [id];
  }

  private add(item: ChatItem): string {
    this.items.set(item.id, item);
    if (this.items.size > MAX_ITEMS) {
      const first = this.items.keys().next().value;
      if (first !== undefined) {
        this.items.delete(first);
      }
    }
    return item.id;
  }

  private nextId(prefix: string): string {
    this.counter += 1;
    return `${prefix}-${this.counter}`;
  }

  /** A prompt typed in this window: shown at once. */
  localPrompt(text: string): string[] {
    this.open = undefined;
    this.inflight += 1;
    return [this.add({ id: this.nextId('user'), kind: 'user', text })];
  }

  /** The sidecar admitted (result) or refused (undefined) a local prompt. */
  promptAnswered(result: PromptResult | undefined, error?: string): string[] {
    this.inflight = Math.max(0, this.inflight - 1);
    if (result) {
      this.ownTurns.add(String(result.turnId));
      if (result.position > 0) {
        return [this.note(`Queued (position ${result.position}).`, 'info')];
      }
      return [];
    }
    return error ? [this.note(`Not sent: ${error}`, 'error')] : [];
  }

  note(text: string, level: 'info' | 'warning' | 'error'): string {
    this.open = undefined;
    return this.add({ id: this.nextId('note'), kind: 'note', text, level });
  }

  /** Applies one acp/sessionUpdate; returns the ids of the items it changed. */
  update(p: SessionUpdateParams): string[] {
    if (this.sessionId !== null && p.sessionId !== this.sessionId) {
      return [];
    }
    if (p.replay && this.historyShown) {
      return [];
    }
    const u = isRecord(p.update) ? p.update : {};
    const kind = typeof u.sessionUpdate === 'string' ? u.sessionUpdate : '';
    const turn = str(p.turnId) ?? '';
    const chunkKind = CHUNK_KINDS[kind];
    if (chunkKind) {
      if (chunkKind === 'user' && !p.replay && (this.ownTurns.has(turn) || (this.inflight > 0 && !turn))) {
        return []; // the agent's echo of a prompt already shown
      }
      return this.chunk(chunkKind, str(u.messageId), turn, Boolean(p.replay), contentText(u.content));
    }
    if (kind === 'tool_call' || kind === 'tool_call_update') {
      return this.tool(u);
    }
    if (kind === 'plan') {
      const entries: PlanEntry[] = [];
      for (const e of Array.isArray(u.entries) ? u.entries : []) {
        if (isRecord(e)) {
          entries.push({ content: String(e.content ?? ''), status: String(e.status ?? 'pending') });
        }
      }
      this.open = undefined;
      const id = `plan-${turn || 'replay'}`;
      const existing = this.items.get(id);
      if (existing && existing.kind === 'plan') {
        existing.entries = entries;
        return [id];
      }
      return [this.add({ id, kind: 'plan', entries })];
    }
    if (kind === 'current_mode_update' && typeof u.currentModeId === 'string') {
      return [this.note(`Mode: ${u.currentModeId}`, 'info')];
    }
    if (kind === 'notice' && isRecord(u)) {
      const level = u.severity === 'error' ? 'error' : u.severity === 'warning' ? 'warning' : 'info';
      return [this.note(String(u.message ?? u.text ?? ''), level)];
    }
    return [];
  }

  private chunk(kind: 'user' | 'agent' | 'thought', messageId: string | undefined, turn: string, replay: boolean, text: string): string[] {
    if (!text) {
      return [];
    }
    const key = messageId ?? `${replay ? 'replay' : 'turn'}:${turn}`;
    const open = this.open;
    if (open && open.kind === kind && open.key === key) {
      const item = this.items.get(open.id);
      if (item && (item.kind === 'agent' || item.kind === 'thought' || item.kind === 'user')) {
        item.text += text;
        if (item.text.length > MAX_MESSAGE_CHARS) {
          item.text = CUT_MARK + item.text.slice(item.text.length - MAX_MESSAGE_CHARS + CUT_MARK.length);
        }
        return [item.id];
      }
    }
    const id = this.add({ id: this.nextId(kind), kind, text });
    this.open = { kind, key, id };
    return [id];
  }

  private tool(u: Record<string, unknown>): string[] {
    const toolCallId = str(u.toolCallId);
    if (!toolCallId) {
      return [];
    }
    this.open = undefined;
    const id = `tool-${toolCallId}`;
    let item = this.items.get(id);
    if (!item || item.kind !== 'tool') {
      item = { id, kind: 'tool', toolCallId, title: 'Tool call', toolKind: 'other', status: 'pending', diffs: [], locations: [] };
      this.add(item);
    }
    if (typeof u.title === 'string') {
      item.title = u.title;
    }
    if (typeof u.kind === 'string') {
      item.toolKind = u.kind;
    }
    if (typeof u.status === 'string') {
      item.status = u.status;
    }
    if (Array.isArray(u.content)) {
      const diffs = toolCallDiffs(u.content);
      if (diffs.length > 0) {
        item.diffs = diffs;
      }
    }
    if (Array.isArray(u.locations)) {
      item.locations = u.locations
        .filter(isRecord)
        .map((l) => String(l.path ?? ''))
        .filter((s) => s.length > 0);
    }
    const ids = [id];
    // A permission card shows its tool call's diff too.
    for (const other of this.items.values()) {
      if (other.kind === 'permission' && other.toolCallId === toolCallId && other.diffs.length === 0 && item.diffs.length > 0) {
        other.diffs = item.diffs;
        ids.push(other.id);
      }
    }
    return ids;
  }

  /** Applies one acp/turn. */
  turn(p: TurnParams): string[] {
    if (this.sessionId !== null && p.sessionId !== this.sessionId) {
      return [];
    }
    const turn = String(p.turnId);
    if (p.state === 'running' || p.state === 'queued') {
      this.runningTurns.add(turn);
      return [];
    }
    if (p.state !== 'ended') {
      return [];
    }
    this.runningTurns.delete(turn);
    this.ownTurns.delete(turn);
    this.open = undefined;
    if (p.error) {
      const message = isRecord(p.error) ? String(p.error.message ?? '') : String(p.error);
      return [this.note(`The turn failed: ${message}`, 'error')];
    }
    if (p.stopReason && p.stopReason !== 'end_turn') {
      return [this.note(`The turn ended: ${p.stopReason}`, p.stopReason === 'cancelled' ? 'info' : 'warning')];
    }
    if (p.answered === false) {
      return [this.note('No answer: the agent ended the turn without a reply', 'warning')];
    }
    return [];
  }

  /** Applies one acp/permission (pending or resolved). */
  permission(p: PermissionParams): string[] {
    if (this.sessionId !== null && p.sessionId !== this.sessionId) {
      return [];
    }
    const requestId = String(p.requestId);
    const id = `permission-${requestId}`;
    const existing = this.items.get(id);
    if (p.state === 'resolved') {
      if (!existing || existing.kind !== 'permission') {
        return [];
      }
      existing.pending = false;
      const chosen = existing.options.find((o) => o.optionId === p.outcome?.optionId);
      existing.answer = p.outcome?.outcome === 'selected' ? (chosen?.name ?? String(p.outcome.optionId)) : 'cancelled';
      return [id];
    }
    const toolCall = isRecord(p.toolCall) ? p.toolCall : {};
    const toolCallId = str(toolCall.toolCallId);
    let diffs = toolCallDiffs(toolCall.content);
    const tool = toolCallId ? this.items.get(`tool-${toolCallId}`) : undefined;
    if (diffs.length === 0 && tool && tool.kind === 'tool') {
      diffs = tool.diffs;
    }
    const title =
      typeof toolCall.title === 'string' ? toolCall.title : tool && tool.kind === 'tool' ? tool.title : 'a tool call';
    const options = (Array.isArray(p.options) ? p.options : []).filter(
      (o): o is PermissionOption => isRecord(o) && typeof o.optionId === 'string',
    );
    this.open = undefined;
    if (existing) {
      this.items.delete(id);
    }
    return [this.add({ id, kind: 'permission', requestId, title, toolCallId, options, pending: true, answer: undefined, diffs })];
  }

  /** Pending permission cards, oldest first. */
  pendingPermissions(): Array<Extract<ChatItem, { kind: 'permission' }>> {
    return this.all().filter((i): i is Extract<ChatItem, { kind: 'permission' }> => i.kind === 'permission' && i.pending);
  }
}

/**
 * The transcript document as history: without its prompt area (what follows
 * the last `## Your prompt` rule) and without the sidecar's own marker
 * comments (the chat shows raw HTML as text, so they would show).
 */
export function transcriptHistory(markdown: string): string {
  const marker = /\n---\n+## Your prompt\n/g;
  let cut = -1;
  for (const m of markdown.matchAll(marker)) {
    cut = m.index ?? -1;
  }
  const body = cut >= 0 ? markdown.slice(0, cut) : markdown;
  return body.replace(/^<!-- acp-sidecar[^\n]*-->\n?/gm, '').trimEnd();
}
