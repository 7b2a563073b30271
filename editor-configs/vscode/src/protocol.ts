// The acp-sidecar editor protocol (docs/protocol.md) as types and constants,
// and the settings → initializationOptions mapping. No `vscode` import here,
// so everything is unit-testable in node.
//
// The session's Markdown document is the conversation document here; the
// protocol's names for it keep the word "transcript" (`acp.session.transcript`,
// `transcriptUri`, the `transcript.*` options, the state directory's
// `transcripts/`, the document's `<!-- acp-sidecar transcript …` line).

/** Commands of the sidecar (`workspace/executeCommand`). */
export const AcpCommand = {
  sessionNew: 'acp.session.new',
  sessionList: 'acp.session.list',
  sessionLoad: 'acp.session.load',
  sessionTranscript: 'acp.session.transcript',
  sessionDelete: 'acp.session.delete',
  sessionFork: 'acp.session.fork',
  logout: 'acp.logout',
  prompt: 'acp.prompt',
  cancel: 'acp.cancel',
  sessionRename: 'acp.session.rename',
  sessionSetMode: 'acp.session.setMode',
  sessionSetModel: 'acp.session.setModel',
  sessionSetConfigOption: 'acp.session.setConfigOption',
  editApply: 'acp.edit.apply',
  editProposals: 'acp.edit.proposals',
  permissionRespond: 'acp.permission.respond',
  elicitationRespond: 'acp.elicitation.respond',
  authenticate: 'acp.authenticate',
  agents: 'acp.agents',
  status: 'acp.status',
} as const;

/** Notifications of the sidecar. */
export const AcpNotification = {
  status: 'acp/status',
  sessionInfo: 'acp/sessionInfo',
  sessionUpdate: 'acp/sessionUpdate',
  turn: 'acp/turn',
  permission: 'acp/permission',
  elicitation: 'acp/elicitation',
} as const;

export type AgentState =
  | 'starting'
  | 'idle'
  | 'running'
  | 'cancelling'
  | 'waiting_permission'
  | 'waiting_input'
  | 'disconnected'
  | 'error';

/** A mode or model the agent offers (`modes`/`models` of acp/status). */
export interface Choice {
  id: string;
  name?: string | null;
}

/** One of the agent's `/` commands (`commands` of acp/status). */
export interface AgentCommand {
  name: string;
  description: string;
  hint: string | null;
}

export interface StatusParams {
  sessionId: string | null;
  title: string | null;
  state: AgentState | string;
  agent?: { name?: string | null; title?: string | null; version?: string | null; configured?: string | null } | null;
  mode?: string | null;
  modeId?: string | null;
  modes?: Choice[] | null;
  commands?: AgentCommand[] | null;
  model?: string | null;
  modelId?: string | null;
  models?: Choice[] | null;
  usage?: { used?: number; size?: number; cost?: { amount?: number; currency?: string } | null } | null;
  transcriptUri?: string | null;
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
  /** A live tool call with diffs: what each file becomes (proposals.ts reads them). */
  proposals?: unknown;
}

export interface TurnParams {
  sessionId: string;
  turnId: string | number;
  state: 'queued' | 'running' | 'ended' | string;
  stopReason?: string | null;
  error?: unknown;
  /** On `ended`: whether the agent sent anything for the turn (false with end_turn: no answer). */
  answered?: boolean;
}

/** An ACP permission option. */
export interface PermissionOption {
  optionId: string;
  name: string;
  kind: 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always' | string;
}

/** One field of an agent's question, as the sidecar read it (docs/protocol.md, Elicitation). */
export interface ElicitationField {
  name: string;
  kind: 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'multiselect';
  title: string;
  required: boolean;
  description?: string | null;
  default?: unknown;
  options?: { value: string; title: string }[];
}

/** `acp/elicitation`: an agent's question, pending, resolved or (a URL) completed. */
export interface ElicitationParams {
  elicitationId: string;
  sessionId: string | null;
  mode: 'form' | 'url';
  message: string;
  title?: string | null;
  fields?: ElicitationField[];
  url?: string;
  state: 'pending' | 'resolved' | 'completed';
  action: string | null;
}

export interface PermissionParams {
  requestId: string | number;
  sessionId: string;
  turnId?: string | number | null;
  toolCall?: Record<string, unknown> | null;
  options: PermissionOption[];
  state: 'pending' | 'resolved' | string;
  outcome?: { outcome: string; optionId?: string } | null;
  /** Pending: what each file of its tool call becomes (proposals.ts reads them); resolved: null. */
  proposals?: unknown;
}

export interface SessionEntry {
  sessionId: string;
  cwd: string;
  title: string | null;
  titleSource: 'user' | 'agent' | 'list' | 'fallback' | string | null;
  updatedAt: string | null;
  pendingTitle: string | null;
  active: boolean;
  /** The configured agent the session belongs to. */
  agent?: string | null;
}

/** `acp.session.fork`: the new session, which is the active one now. */
export interface ForkResult {
  sessionId: string;
  title: string | null;
  agent: string | null;
}

export interface PromptResult {
  sessionId: string;
  turnId: string | number;
  position: number;
}

/** One configured agent, as `acp.agents` lists it (docs/protocol.md, Agents). */
export interface AgentEntry {
  name: string;
  title: string | null;
  version: string | null;
  state: string;
  message: string | null;
  default: boolean;
}

export interface ConversationDocumentResult {
  sessionId: string;
  uri: string;
}

// ------------------------------------------------------------------ settings

/** The bounds docs/protocol.md gives for titles.maxLength (the setting's schema says the same). */
export const TITLE_MAX_LENGTH = { min: 8, max: 10000 } as const;

export interface Settings {
  agentCommand: string[];
  agentEnv: Record<string, string>;
  permissions: string;
  renameTimeoutMs: number;
  renameFallback: string;
  titlesMaxLength: number;
  /** `acpSidecar.changes.*`: how the agent's landed changes are marked, and whether to follow it. */
  changesSeverity?: string;
  changesFollow?: boolean;
  /** Named agents (`acpSidecar.agents`): name -> {command, env?}, sent as they are. */
  agents?: Record<string, unknown>;
  defaultAgent?: string;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Math.round(value)));
}

/**
 * initializationOptions from the extension's settings. The extension shows the
 * conversation (chat view) and permission requests (notifications with a diff
 * review) itself, so it turns off the sidecar's own conversation document on
 * prompt and its permission dialogs; a loaded session's history comes from
 * the document, so no update per replayed one.
 */
export function initializationOptions(s: Settings): Record<string, unknown> {
  const init: Record<string, unknown> = {
    permissions: s.permissions,
    rename: { timeoutMs: s.renameTimeoutMs, fallback: s.renameFallback },
    titles: { maxLength: clamp(s.titlesMaxLength, TITLE_MAX_LENGTH.min, TITLE_MAX_LENGTH.max) },
    notify: { permissionDialog: false, elicitationDialog: false, replayUpdates: false },
    transcript: { showOnPrompt: false },
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
  if (s.agents && typeof s.agents === 'object' && Object.keys(s.agents).length > 0) {
    init.agents = s.agents; // checked by the sidecar, which names each bad entry
  }
  if (s.defaultAgent) {
    init.defaultAgent = s.defaultAgent;
  }
  if (s.changesSeverity !== undefined || s.changesFollow !== undefined) {
    const changes: Record<string, unknown> = {};
    if (s.changesSeverity !== undefined) {
      changes.severity = s.changesSeverity; // checked by the sidecar, which names a bad value
    }
    if (s.changesFollow !== undefined) {
      changes.follow = s.changesFollow;
    }
    init.changes = changes;
  }
  return init;
}

export type NewerOption = 'permissionDialog' | 'elicitationDialog' | 'replayUpdates' | 'transcript';

/** Options this extension sends that only newer sidecars know, and the feature each stands for. */
const NEWER_OPTIONS: Record<string, NewerOption> = {
  'notify.permissionDialog': 'permissionDialog',
  'notify.elicitationDialog': 'elicitationDialog',
  'notify.replayUpdates': 'replayUpdates',
  transcript: 'transcript',
  'transcript.showOnPrompt': 'transcript',
};

/** The name acp-sidecar gives in `serverInfo` of its answer to `initialize`. */
export const SERVER_NAME = 'acp-sidecar';

/**
 * The first acp-sidecar version that knows each of those features: 0.1.0, the first version, for
 * all of them (a development build of 0.1.0 from before one of them came says 0.1.0 too, and is
 * taken to know it).
 */
const FEATURE_SINCE: Record<NewerOption, string> = {
  permissionDialog: '0.1.0',
  elicitationDialog: '0.1.0',
  replayUpdates: '0.1.0',
  transcript: '0.1.0',
};

/** A version's leading numbers (`0.1.0`, `0.2.0.dev1`, `1.0.0-rc.1` -> [1, 0, 0]); none: undefined. */
function versionNumbers(version: string): number[] | undefined {
  const m = /^v?(\d+(?:\.\d+)*)/.exec(version.trim());
  return m ? m[1].split('.').map(Number) : undefined;
}

/** Whether version `a` is `b` or later (numbers missing at the end count as 0). */
function atLeast(a: number[], b: number[]): boolean {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) {
      return x > y;
    }
  }
  return true;
}

/**
 * The features of the options above that a sidecar does not know, learnt from `serverInfo` of
 * its answer to `initialize` (vscode-languageclient's `initializeResult.serverInfo`): none for
 * an acp-sidecar of a version that knows them all; every one for a server that names no
 * acp-sidecar version (it may predate them all).
 */
export function featuresUnknownTo(serverInfo: { name: string; version?: string } | undefined): NewerOption[] {
  const version = serverInfo?.name === SERVER_NAME && serverInfo.version ? versionNumbers(serverInfo.version) : undefined;
  const all = Object.keys(FEATURE_SINCE) as NewerOption[];
  if (!version) {
    return all;
  }
  return all.filter((f) => !atLeast(version, versionNumbers(FEATURE_SINCE[f]) ?? []));
}

/**
 * A sidecar that predates an option reports it as an error message, either
 * "acp-sidecar: initializationOptions.notify: unknown key 'permissionDialog' ignored"
 * or "acp-sidecar: initializationOptions: 1 bad key, the default used for each:
 * transcript (unknown key, ignored)". When every key such a message names is
 * one this extension sends for newer sidecars, the features those keys stand
 * for are returned (else undefined). Whether the sidecar predates them is its
 * version's to say (featuresUnknownTo), never this message's: the caller only
 * keeps from the user the report it expects from that version.
 */
export function refusedNewerOptions(message: string): NewerOption[] | undefined {
  const text = message.trim();
  const keys: string[] = [];
  const single = /^acp-sidecar: initializationOptions(?:\.([A-Za-z]+))?: unknown key '([A-Za-z]+)' ignored$/.exec(text);
  if (single) {
    keys.push(single[1] ? `${single[1]}.${single[2]}` : single[2]);
  } else {
    const listed = /^acp-sidecar: initializationOptions: \d+ bad keys?, the default used for each: (.+)$/.exec(text);
    if (!listed) {
      return undefined;
    }
    for (const part of listed[1].split('; ')) {
      const unknown = /^([A-Za-z.]+) \(unknown key, ignored\)$/.exec(part);
      if (!unknown) {
        return undefined;
      }
      keys.push(unknown[1]);
    }
  }
  const features = keys.map((k) => NEWER_OPTIONS[k]);
  if (features.some((f) => f === undefined)) {
    return undefined;
  }
  return [...new Set(features)];
}
