// Untrusted text (titles, tool call titles, ids) made safe for one line of
// VS Code UI: status bar, quick picks, notifications. Pure, unit-tested.
import type { AgentCommand, Choice, SessionEntry, StatusParams } from './protocol';

// Escape sequences (CSI, OSC/DCS/APC/PM/SOS strings, other ESC pairs), C0/C1
// controls, DEL and bidi overrides.
const ESCAPES =
  /\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?|\x9b[0-?]*[ -/]*[@-~]?/g;
const CONTROLS = /[\x00-\x08\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/** One safe line from untrusted text. */
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

/** Human words for the sidecar's states. */
export const STATE_WORDS: Record<string, string> = {
  starting: 'starting',
  idle: 'idle',
  running: 'running',
  cancelling: 'stopping',
  waiting_permission: 'waiting for you',
  disconnected: 'disconnected',
  error: 'error',
};

/** Status bar text for an acp/status: icon, title, state. */
export function statusBarText(status: StatusParams | undefined, maxTitle = 40): string {
  if (!status) {
    return '$(comment-discussion) ACP';
  }
  const state = sanitize(status.state);
  const icon = STATE_ICONS[state] ?? '$(comment-discussion)';
  const title = truncate(sanitize(status.title), maxTitle) || (status.sessionId ? 'untitled' : 'no session');
  return `${icon} ${escapeIcons(title)} · ${STATE_WORDS[state] ?? state}`;
}

/** Status bar tooltip: agent, mode, model, context use and the sidecar's status line. */
export function statusTooltip(status: StatusParams | undefined): string {
  if (!status) {
    return 'ACP sidecar: not started';
  }
  const lines: string[] = [];
  const title = sanitize(status.title);
  lines.push(title ? `Session: ${title}` : status.sessionId ? 'Session: untitled' : 'No active session');
  const agent = status.agent ?? {};
  const name = sanitize(agent.title) || sanitize(agent.name);
  const configured = sanitize(agent.configured);
  const own = name ? `${name} ${sanitize(agent.version)}`.trim() : '';
  if (configured && configured !== name) {
    // The configured name is what the user chose it by (acpSidecar.agents); the agent's own name after it.
    lines.push(own ? `Agent: ${configured} — ${own}` : `Agent: ${configured}`);
  } else if (own) {
    lines.push(`Agent: ${own}`);
  }
  const mode = displayName(status.mode);
  if (mode) {
    lines.push(`Mode: ${mode}`);
  }
  const model = displayName(status.model);
  if (model) {
    lines.push(`Model: ${model}`);
  }
  const usage = status.usage;
  if (usage && typeof usage.used === 'number' && typeof usage.size === 'number' && usage.size > 0) {
    lines.push(`Context: ${Math.round((100 * usage.used) / usage.size)}% of ${usage.size}`);
  }
  lines.push(`State: ${STATE_WORDS[sanitize(status.state)] ?? sanitize(status.state)}`);
  lines.push('Click to switch session');
  return lines.join('\n');
}

/** The chat view's header: the session's title, its agent (the configured name), the state in words. */
export function chatHeader(status: StatusParams): string {
  const title = truncate(sanitize(status.title), 80) || (status.sessionId ? 'untitled session' : 'no session yet');
  const agent = truncate(sanitize(status.agent?.configured) || sanitize(status.agent?.name), 40);
  const state = STATE_WORDS[sanitize(status.state)] ?? sanitize(status.state);
  return [title, agent, state].filter(Boolean).join(' · ');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A mode/model display name of acp/status. */
function displayName(v: unknown): string | undefined {
  return typeof v === 'string' ? sanitize(v) || undefined : undefined;
}

/** The choices of acp/status `modes`/`models` that are well-formed. */
export function validChoices(list: unknown): Choice[] | undefined {
  if (!Array.isArray(list)) {
    return undefined;
  }
  return list.filter((c): c is Choice => isRecord(c) && typeof c.id === 'string' && c.id.length > 0);
}

/** The agent's `/` commands of acp/status that are well-formed (made safe to show). */
export function validCommands(list: unknown): AgentCommand[] {
  if (!Array.isArray(list)) {
    return [];
  }
  return list
    .filter((c): c is AgentCommand => isRecord(c) && typeof c.name === 'string' && c.name.length > 0 && !/\s/.test(c.name))
    .map((c) => ({
      name: c.name,
      description: sanitize(c.description),
      hint: typeof c.hint === 'string' && sanitize(c.hint) ? sanitize(c.hint) : null,
    }));
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
  const agent = escapeIcons(sanitize(e.agent));
  if (agent) {
    detail.push(agent);
  }
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
