// The acp-sidecar editor contract (CONTRACT.md) as types, plus the pure logic
// of the extension (no `vscode` import here, so it is unit-testable in node).

/** Commands of the sidecar (`workspace/executeCommand`). */
export const AcpCommand = {
  sessionNew: 'acp.session.new',
  sessionList: 'acp.session.list',
  sessionLoad: 'acp.session.load',
  prompt: 'acp.prompt',
  cancel: 'acp.cancel',
  sessionRename: 'acp.session.rename',
  sessionSetMode: 'acp.session.setMode',
  sessionSetModel: 'acp.session.setModel',
  sessionSetConfigOption: 'acp.session.setConfigOption',
  editApply: 'acp.edit.apply',
  permissionRespond: 'acp.permission.respond',
  authenticate: 'acp.authenticate',
  status: 'acp.status',
} as const;

/** Notifications of the sidecar. */
export const AcpNotification = {
  status: 'acp/status',
  sessionInfo: 'acp/sessionInfo',
  sessionUpdate: 'acp/sessionUpdate',
  turn: 'acp/turn',
} as const;

export type AgentState =
  | 'starting'
  | 'idle'
  | 'running'
  | 'cancelling'
  | 'waiting_permission'
  | 'disconnected'
  | 'error';

export interface StatusParams {
  sessionId: string | null;
  title: string | null;
  state: AgentState | string;
  agent?: { name?: string | null; version?: string | null } | null;
  mode?: unknown;
  model?: unknown;
  text?: string | null;
}

export type RenameState = null | 'pending' | 'confirmed' | 'changed' | 'unconfirmed';

export interface SessionInfoParams {
  sessionId: string;
  title: string | null;
  titleSource?: string | null;
  updatedAt?: string | null;
  meta?: unknown;
  renameState?: RenameState;
}

export interface SessionUpdateParams {
  sessionId: string;
  turnId?: string | number | null;
  replay?: boolean;
  update: { sessionUpdate?: string; [key: string]: unknown };
}

export interface TurnParams {
  sessionId: string;
  turnId: string | number;
  state: 'queued' | 'running' | 'ended' | string;
  stopReason?: string | null;
  error?: unknown;
}

export interface SessionEntry {
  sessionId: string;
  cwd: string;
  title: string | null;
  titleSource: 'user' | 'agent' | 'list' | 'fallback' | string | null;
  updatedAt: string | null;
  pendingTitle: string | null;
  active: boolean;
}

export interface PromptResult {
  sessionId: string;
  turnId: string | number;
  position: number;
}

// ------------------------------------------------------------------ text

// Escape sequences (CSI, OSC/DCS/APC/PM/SOS strings, other ESC pairs), C0/C1
// controls, DEL and bidi overrides.
const ESCAPES =
  /\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?|\x9b[0-?]*[ -/]*[@-~]?/g;
const CONTROLS = /[\x00-\x08\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/** One safe line from untrusted text (titles, tool call titles). */
export function sanitize(value: unknown): string {
  if (value === null || value === undefined) {
    return '';
  }
  return String(value)
    .replace(ESCAPES, '')
    .replace(/[\t\n\v\f\r]/g, ' ')
    .replace(CONTROLS, '')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/** At most max code points, with an ellipsis when cut (never splits a surrogate pair). */
export function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  if (max <= 0 || chars.length <= max) {
    return text;
  }
  return chars.slice(0, Math.max(0, max - 1)).join('') + '…';
}

/** Status bar and quick pick labels render `$(icon)`: escape it in untrusted text. */
export function escapeIcons(text: string): string {
  return text.replace(/\$\(/g, '\\$(');
}

const STATE_ICONS: Record<string, string> = {
  starting: '$(loading~spin)',
  idle: '$(comment-discussion)',
  running: '$(sync~spin)',
  cancelling: '$(debug-stop)',
  waiting_permission: '$(question)',
  disconnected: '$(debug-disconnect)',
  error: '$(error)',
};

/** Status bar text for an acp/status: icon, title, state. */
export function statusBarText(status: StatusParams | undefined, maxTitle = 40): string {
  if (!status) {
    return '$(comment-discussion) ACP';
  }
  const state = sanitize(status.state);
  const icon = STATE_ICONS[state] ?? '$(comment-discussion)';
  const title = truncate(sanitize(status.title), maxTitle) || 'no session';
  return `${icon} ${escapeIcons(title)} · ${state}`;
}

/** Status bar tooltip: agent, mode, model and the sidecar's status line. */
export function statusTooltip(status: StatusParams | undefined): string {
  if (!status) {
    return 'ACP sidecar: not started';
  }
  const lines: string[] = [];
  const title = sanitize(status.title);
  lines.push(title ? `Session: ${title}` : 'No active session');
  const agent = status.agent ?? {};
  const name = sanitize(agent.name);
  if (name) {
    lines.push(`Agent: ${name} ${sanitize(agent.version)}`.trim());
  }
  const mode = currentId(status.mode);
  if (mode) {
    lines.push(`Mode: ${mode}`);
  }
  const model = currentId(status.model);
  if (model) {
    lines.push(`Model: ${model}`);
  }
  lines.push(`State: ${sanitize(status.state)}`);
  const text = sanitize(status.text);
  if (text) {
    lines.push(text);
  }
  lines.push('Click to switch session');
  return lines.join('\n');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The current id of a mode/model field (a plain id or an object). */
export function currentId(v: unknown): string | undefined {
  if (typeof v === 'string') {
    return sanitize(v) || undefined;
  }
  if (isRecord(v)) {
    for (const key of ['currentModeId', 'currentModelId', 'currentValue', 'id', 'value']) {
      const x = v[key];
      if (typeof x === 'string') {
        return sanitize(x);
      }
    }
  }
  return undefined;
}

/** Every id a mode/model field or config option offers. */
export function offeredIds(v: unknown): string[] {
  const out = new Set<string>();
  const cur = currentId(v);
  if (cur) {
    out.add(cur);
  }
  if (isRecord(v)) {
    for (const key of ['availableModes', 'availableModels', 'options']) {
      const list = v[key];
      if (!Array.isArray(list)) {
        continue;
      }
      for (const item of list) {
        if (!isRecord(item)) {
          continue;
        }
        for (const idKey of ['id', 'modelId', 'value']) {
          if (typeof item[idKey] === 'string') {
            out.add(item[idKey] as string);
          }
        }
        if (Array.isArray(item.options)) {
          for (const g of item.options) {
            if (isRecord(g) && typeof g.value === 'string') {
              out.add(g.value);
            }
          }
        }
      }
    }
  }
  return [...out];
}

// ------------------------------------------------------------------ settings

export interface Settings {
  agentCommand: string[];
  agentEnv: Record<string, string>;
  permissions: string;
  renameTimeoutMs: number;
  renameFallback: string;
  titlesMaxLength: number;
}

/** initializationOptions (CONTRACT) from the extension's settings. */
export function initializationOptions(s: Settings): Record<string, unknown> {
  const init: Record<string, unknown> = {
    permissions: s.permissions,
    rename: { timeoutMs: s.renameTimeoutMs, fallback: s.renameFallback },
    titles: { maxLength: s.titlesMaxLength },
  };
  const command = s.agentCommand.filter((x) => typeof x === 'string' && x.length > 0);
  const env = s.agentEnv;
  if (command.length > 0 || Object.keys(env).length > 0) {
    const agent: Record<string, unknown> = {};
    if (command.length > 0) {
      agent.command = command;
    }
    if (Object.keys(env).length > 0) {
      agent.env = env;
    }
    init.agent = agent;
  }
  return init;
}

// ------------------------------------------------------------------ sessions

export interface SessionPick {
  label: string;
  description: string;
  detail: string;
  sessionId: string;
}

export function sessionPick(e: SessionEntry): SessionPick {
  const title = escapeIcons(truncate(sanitize(e.title), 80)) || '(untitled)';
  const detail: string[] = [];
  detail.push(sanitize(e.titleSource) || 'untitled');
  if (e.updatedAt) {
    detail.push(sanitize(e.updatedAt));
  }
  if (e.pendingTitle) {
    detail.push(`renaming to ${escapeIcons(truncate(sanitize(e.pendingTitle), 40))}`);
  }
  return {
    label: (e.active ? '$(circle-filled) ' : '') + title,
    description: escapeIcons(sanitize(e.cwd)),
    detail: detail.join(' · '),
    sessionId: e.sessionId,
  };
}

// ------------------------------------------------------------------ transcript

const CHUNK_KINDS: Record<string, string> = {
  user_message_chunk: 'You',
  agent_message_chunk: 'Agent',
  agent_thought_chunk: 'Thinking',
};

interface ToolState {
  kind: string;
  title: string;
  status: string;
}

/**
 * Turns the acp/sessionUpdate stream of the active session into append-only
 * text for an output channel: message chunks concatenated, tool calls as one
 * line each (again when their status changes), plans as checklists.
 */
export class TranscriptFormatter {
  private block: string | undefined;
  private lastHeader: string | undefined;
  private readonly tools = new Map<string, ToolState>();
  private readonly prompts = new Map<string, { text: string; echoed: boolean }>();
  private readonly turnStates = new Map<string, string>();
  private inflight = 0;

  /** A prompt request was sent (its turn id is not known yet). */
  promptSent(): void {
    this.inflight += 1;
  }

  /** The prompt request was answered; returns text to append (the echo) if the turn already runs. */
  promptAnswered(text: string, result: PromptResult | undefined): string {
    this.inflight = Math.max(0, this.inflight - 1);
    if (!result) {
      return '';
    }
    const id = String(result.turnId);
    this.prompts.set(id, { text, echoed: false });
    const st = this.turnStates.get(id);
    return st === 'running' || st === 'ended' ? this.echo(id) : '';
  }

  private echo(turnId: string): string {
    const p = this.prompts.get(turnId);
    if (!p || p.echoed) {
      return '';
    }
    p.echoed = true;
    const out = this.text('You', `prompt:${turnId}`, p.text);
    return out + this.closeBlock();
  }

  private afterTool = false;

  /** End the open text block (or the list of tool call lines) with a blank line. */
  private closeBlock(): string {
    if (this.block !== undefined) {
      this.block = undefined;
      return '\n\n';
    }
    if (this.afterTool) {
      this.afterTool = false;
      return '\n';
    }
    return '';
  }

  private text(kind: string, key: string, text: string): string {
    if (!text) {
      return '';
    }
    let out = '';
    if (this.block !== key) {
      out += this.closeBlock();
      if (kind === 'You' || this.lastHeader !== kind) {
        out += `### ${kind}\n\n`;
        this.lastHeader = kind;
      }
      this.block = key;
    }
    const body = kind === 'Thinking' ? text.replace(/\n/g, '\n> ') : text;
    if (kind === 'Thinking' && out.endsWith('\n\n')) {
      out += '> ';
    }
    return out + body;
  }

  /** Text to append for one acp/sessionUpdate (of the active session). */
  update(params: SessionUpdateParams): string {
    const u = params.update ?? {};
    const kind = typeof u.sessionUpdate === 'string' ? u.sessionUpdate : '';
    const turn = params.turnId === null || params.turnId === undefined ? undefined : String(params.turnId);
    const chunk = CHUNK_KINDS[kind];
    if (chunk) {
      if (chunk === 'You' && !params.replay) {
        if ((turn && this.prompts.has(turn)) || (!turn && this.inflight > 0)) {
          return '';
        }
      }
      const messageId = typeof u.messageId === 'string' ? u.messageId : undefined;
      const key = `${chunk}:${messageId ?? `${params.replay ? 'replay' : 'turn'}:${turn ?? ''}`}`;
      return this.text(chunk, key, chunkText(u.content));
    }
    if (kind === 'tool_call' || kind === 'tool_call_update') {
      return this.tool(u);
    }
    if (kind === 'plan') {
      const entries = Array.isArray(u.entries) ? u.entries : [];
      const lines = ['**Plan**'];
      for (const e of entries) {
        if (isRecord(e)) {
          const box = e.status === 'completed' ? '[x]' : '[ ]';
          const extra = e.status === 'in_progress' ? ' (in progress)' : '';
          lines.push(`- ${box} ${sanitize(e.content)}${extra}`);
        }
      }
      return this.closeBlock() + lines.join('\n') + '\n\n';
    }
    if (kind === 'current_mode_update' && typeof u.currentModeId === 'string') {
      return this.closeBlock() + `_mode: ${sanitize(u.currentModeId)}_\n\n`;
    }
    if (kind === 'session_info_update' && typeof u.title === 'string') {
      return this.closeBlock() + `_title: ${sanitize(u.title)}_\n\n`;
    }
    return '';
  }

  private tool(u: Record<string, unknown>): string {
    const id = u.toolCallId === undefined || u.toolCallId === null ? undefined : String(u.toolCallId);
    if (!id) {
      return '';
    }
    const prev = this.tools.get(id);
    const t: ToolState = prev ? { ...prev } : { kind: 'other', title: '', status: 'pending' };
    for (const key of ['kind', 'title', 'status'] as const) {
      const v = u[key];
      if (typeof v === 'string') {
        t[key] = v;
      }
    }
    this.tools.set(id, t);
    if (this.tools.size > 2000) {
      const first = this.tools.keys().next().value;
      if (first !== undefined) {
        this.tools.delete(first);
      }
    }
    // Print new calls, and known ones again when their status changes.
    if (prev && prev.status === t.status) {
      return '';
    }
    const title = sanitize(t.title) || 'tool call';
    const head = this.block !== undefined ? this.closeBlock() : '';
    this.afterTool = true;
    return head + `- [${sanitize(t.kind)}] ${title} (${sanitize(t.status)})\n`;
  }

  /** Text to append for an acp/turn. */
  turn(params: TurnParams): string {
    const id = String(params.turnId);
    this.turnStates.set(id, params.state);
    if (this.turnStates.size > 500) {
      const first = this.turnStates.keys().next().value;
      if (first !== undefined) {
        this.turnStates.delete(first);
      }
    }
    let out = '';
    if (params.state === 'running' || params.state === 'ended') {
      out += this.echo(id);
    }
    if (params.state === 'ended') {
      this.prompts.delete(id);
      if (params.error) {
        const msg = isRecord(params.error) ? sanitize(params.error.message) : sanitize(params.error);
        out += this.closeBlock() + `_turn failed: ${msg}_\n\n`;
      } else if (params.stopReason && params.stopReason !== 'end_turn') {
        out += this.closeBlock() + `_turn ended: ${sanitize(params.stopReason)}_\n\n`;
      } else {
        out += this.closeBlock();
      }
    }
    return out;
  }

  /** Another session became active: a header line, fresh block state. */
  switchTo(title: string | null): string {
    this.block = undefined;
    this.lastHeader = undefined;
    return `\n=== ${sanitize(title) || 'new session'} ===\n\n`;
  }
}

function chunkText(content: unknown): string {
  if (!isRecord(content)) {
    return '';
  }
  switch (content.type) {
    case 'text':
      return typeof content.text === 'string' ? content.text : '';
    case 'resource_link':
      return `[${sanitize(content.name ?? content.uri)}](${sanitize(content.uri)})`;
    case 'resource':
      return isRecord(content.resource) ? `[resource: ${sanitize(content.resource.uri)}]` : '';
    case 'image':
      return '[image]';
    case 'audio':
      return '[audio]';
    default:
      return '';
  }
}
