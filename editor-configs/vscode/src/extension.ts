// VS Code client for acp-sidecar: starts the sidecar as a language server for
// every file, shows the active session in the status bar, streams the
// transcript into an output channel and maps the palette commands to the
// sidecar's workspace/executeCommand commands (CONTRACT.md).
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import {
  AcpCommand,
  AcpNotification,
  PromptResult,
  SessionEntry,
  SessionInfoParams,
  SessionUpdateParams,
  Settings,
  StatusParams,
  TranscriptFormatter,
  TurnParams,
  currentId,
  initializationOptions,
  offeredIds,
  sanitize,
  sessionPick,
  statusBarText,
  statusTooltip,
} from './protocol';

const CLIENT_ID = 'acpSidecar';

let client: LanguageClient | undefined;
let statusItem: vscode.StatusBarItem;
let transcriptChannel: vscode.OutputChannel;
let logChannel: vscode.OutputChannel;
let formatter = new TranscriptFormatter();
let lastStatus: StatusParams | undefined;
const known = { modes: new Set<string>(), models: new Set<string>() };

function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration('acpSidecar');
  return {
    agentCommand: c.get<string[]>('agent.command', []),
    agentEnv: c.get<Record<string, string>>('agent.env', {}),
    permissions: c.get<string>('permissions', 'ask'),
    renameTimeoutMs: c.get<number>('rename.timeoutMs', 120000),
    renameFallback: c.get<string>('rename.fallback', 'keep_local'),
    titlesMaxLength: c.get<number>('titles.maxLength', 500),
  };
}

function createClient(): LanguageClient {
  const c = vscode.workspace.getConfiguration('acpSidecar');
  const command = c.get<string>('path', 'acp-sidecar') || 'acp-sidecar';
  const args = c.get<string[]>('args', []);
  const serverOptions: ServerOptions = {
    run: { command, args, transport: TransportKind.stdio },
    debug: { command, args, transport: TransportKind.stdio },
  };
  const clientOptions: LanguageClientOptions = {
    // Every document: the sidecar serves code actions and file access for all of them.
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    initializationOptions: () => initializationOptions(readSettings()),
    outputChannel: logChannel,
    progressOnInitialization: false,
  };
  const lc = new LanguageClient(CLIENT_ID, 'ACP Sidecar', serverOptions, clientOptions);
  lc.onNotification(AcpNotification.status, (p: StatusParams) => onStatus(p));
  lc.onNotification(AcpNotification.sessionInfo, (p: SessionInfoParams) => onSessionInfo(p));
  lc.onNotification(AcpNotification.sessionUpdate, (p: SessionUpdateParams) => onSessionUpdate(p));
  lc.onNotification(AcpNotification.turn, (p: TurnParams) => onTurn(p));
  lc.onDidChangeState((e) => {
    if (e.newState === State.Stopped && lastStatus) {
      onStatus({ ...lastStatus, state: 'disconnected' });
    }
  });
  return lc;
}

// ------------------------------------------------------------------ notifications

/** Ids offered by a mode/model field of acp/status: a plain string there is a display name. */
function statusIds(v: unknown): string[] {
  return typeof v === 'object' && v !== null ? offeredIds(v) : [];
}

function onStatus(p: StatusParams): void {
  const prevSession = lastStatus?.sessionId ?? null;
  lastStatus = p;
  if ((p.sessionId ?? null) !== prevSession && p.sessionId) {
    known.modes.clear();
    known.models.clear();
    transcriptChannel.append(formatter.switchTo(p.title));
  }
  for (const id of statusIds(p.mode)) {
    known.modes.add(id);
  }
  for (const id of statusIds(p.model)) {
    known.models.add(id);
  }
  statusItem.text = statusBarText(p);
  statusItem.tooltip = statusTooltip(p);
  statusItem.backgroundColor =
    p.state === 'error' || p.state === 'disconnected'
      ? new vscode.ThemeColor('statusBarItem.errorBackground')
      : p.state === 'waiting_permission'
        ? new vscode.ThemeColor('statusBarItem.warningBackground')
        : undefined;
  statusItem.show();
}

function onSessionInfo(p: SessionInfoParams): void {
  if (p.renameState === 'changed') {
    void vscode.window.showInformationMessage(`ACP: the agent chose another title: ${sanitize(p.title)}`);
  } else if (p.renameState === 'unconfirmed') {
    void vscode.window.showWarningMessage(
      `ACP: the agent did not confirm the rename; the title is now: ${sanitize(p.title)}`,
    );
  }
}

function onSessionUpdate(p: SessionUpdateParams): void {
  const u = p.update ?? {};
  if (u.sessionUpdate === 'config_option_update' && Array.isArray(u.configOptions)) {
    for (const opt of u.configOptions as Array<Record<string, unknown>>) {
      if (opt && (opt.category === 'mode' || opt.category === 'model')) {
        const set = opt.category === 'mode' ? known.modes : known.models;
        for (const id of offeredIds(opt)) {
          set.add(id);
        }
      }
    }
  } else if (u.sessionUpdate === 'current_mode_update') {
    const id = currentId(u);
    if (id) {
      known.modes.add(id);
    }
  }
  if (lastStatus?.sessionId && p.sessionId !== lastStatus.sessionId) {
    return;
  }
  transcriptChannel.append(formatter.update(p));
}

function onTurn(p: TurnParams): void {
  if (lastStatus?.sessionId && p.sessionId !== lastStatus.sessionId) {
    return;
  }
  transcriptChannel.append(formatter.turn(p));
  if (p.state === 'ended' && p.error) {
    const e = p.error as { message?: unknown };
    void vscode.window.showErrorMessage(`ACP: turn failed: ${sanitize(e.message ?? p.error)}`);
  }
}

// ------------------------------------------------------------------ commands

async function exec<T>(command: string, arg: Record<string, unknown> = {}): Promise<T | undefined> {
  if (!client) {
    void vscode.window.showErrorMessage('ACP: the sidecar is not running (see "ACP: Show sidecar log").');
    return undefined;
  }
  try {
    if (client.state !== State.Running) {
      await client.start();
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] })) as T;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    void vscode.window.showErrorMessage(`ACP: ${command}: ${message}`);
    return undefined;
  }
}

async function prompt(textArg?: unknown): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const selection = editor && !editor.selection.isEmpty ? editor.selection : undefined;
  let text = typeof textArg === 'string' ? textArg : undefined;
  if (!text) {
    text = await vscode.window.showInputBox({
      prompt: selection ? 'Ask the agent about the selection' : 'Ask the agent',
      placeHolder: 'What should the agent do?',
      ignoreFocusOut: true,
    });
  }
  if (!text || !text.trim()) {
    return;
  }
  const arg: Record<string, unknown> = { text };
  if (editor && selection && client) {
    // The selection as context (a uri alone would attach the whole document).
    arg.uri = editor.document.uri.toString();
    arg.range = client.code2ProtocolConverter.asRange(selection);
  }
  formatter.promptSent();
  const result = await exec<PromptResult>(AcpCommand.prompt, arg);
  transcriptChannel.append(formatter.promptAnswered(text, result));
  if (result && result.position > 0) {
    void vscode.window.showInformationMessage(`ACP: prompt queued (position ${result.position})`);
  }
}

async function cancel(): Promise<void> {
  const res = await exec<{ cancelled: boolean }>(AcpCommand.cancel, {});
  if (res && !res.cancelled) {
    void vscode.window.showInformationMessage('ACP: nothing is running');
  }
}

async function rename(titleArg?: unknown): Promise<void> {
  let title = typeof titleArg === 'string' ? titleArg : undefined;
  if (!title) {
    title = await vscode.window.showInputBox({
      prompt: 'New title of the active session',
      value: sanitize(lastStatus?.title),
      ignoreFocusOut: true,
    });
  }
  if (title && title.trim()) {
    await exec(AcpCommand.sessionRename, { title: title.trim() });
  }
}

async function sessions(refresh = false): Promise<void> {
  const res = await exec<{ sessions: SessionEntry[] }>(AcpCommand.sessionList, refresh ? { refresh: true } : {});
  if (!res) {
    return;
  }
  const entries = [...(res.sessions ?? [])].sort((a, b) => String(b.updatedAt ?? '').localeCompare(String(a.updatedAt ?? '')));
  if (entries.length === 0) {
    void vscode.window.showInformationMessage('ACP: no sessions yet');
    return;
  }
  const pick = await vscode.window.showQuickPick(entries.map(sessionPick), {
    title: 'ACP sessions',
    placeHolder: 'Load a session',
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (pick) {
    await exec(AcpCommand.sessionLoad, { sessionId: pick.sessionId });
  }
}

async function newSession(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const folder = editor ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
  await exec(AcpCommand.sessionNew, folder && folder.uri.scheme === 'file' ? { cwd: folder.uri.fsPath } : {});
}

async function pickId(kind: 'mode' | 'model', arg?: unknown): Promise<string | undefined> {
  if (typeof arg === 'string' && arg) {
    return arg;
  }
  const ids = [...(kind === 'mode' ? known.modes : known.models)];
  const field = kind === 'mode' ? lastStatus?.mode : lastStatus?.model;
  const current = typeof field === 'object' ? currentId(field) : undefined;
  if (ids.length > 0) {
    return vscode.window.showQuickPick(
      ids.map((id) => ({ label: id, description: id === current ? 'current' : '' })),
      { title: `ACP: set ${kind}` },
    ).then((p) => p?.label);
  }
  return vscode.window.showInputBox({ prompt: `ACP: ${kind} id`, value: current ?? '' });
}

async function setMode(arg?: unknown): Promise<void> {
  const id = await pickId('mode', arg);
  if (id) {
    await exec(AcpCommand.sessionSetMode, { modeId: id });
  }
}

async function setModel(arg?: unknown): Promise<void> {
  const id = await pickId('model', arg);
  if (id) {
    await exec(AcpCommand.sessionSetModel, { modelId: id });
  }
}

async function restart(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop();
    } catch {
      // It may not have started.
    }
    await old.dispose();
  }
  formatter = new TranscriptFormatter();
  lastStatus = undefined;
  statusItem.text = statusBarText(undefined);
  statusItem.tooltip = statusTooltip(undefined);
  client = createClient();
  try {
    await client.start();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    void vscode.window.showErrorMessage(
      `ACP: could not start the sidecar (${message}). Check the "acpSidecar.path" setting.`,
    );
  }
}

// ------------------------------------------------------------------ activation

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  logChannel = vscode.window.createOutputChannel('ACP Sidecar');
  transcriptChannel = vscode.window.createOutputChannel('ACP Transcript', 'markdown');
  statusItem = vscode.window.createStatusBarItem('acpSidecar.status', vscode.StatusBarAlignment.Left, 100);
  statusItem.name = 'ACP session';
  statusItem.command = 'acpSidecar.sessions';
  statusItem.text = statusBarText(undefined);
  statusItem.tooltip = statusTooltip(undefined);
  statusItem.show();
  context.subscriptions.push(logChannel, transcriptChannel, statusItem);

  const register = (id: string, fn: (...args: unknown[]) => Promise<void> | void) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  register('acpSidecar.prompt', (text) => prompt(text));
  register('acpSidecar.cancel', () => cancel());
  register('acpSidecar.rename', (title) => rename(title));
  register('acpSidecar.sessions', () => sessions(false));
  register('acpSidecar.refreshSessions', () => sessions(true));
  register('acpSidecar.newSession', () => newSession());
  register('acpSidecar.setMode', (id) => setMode(id));
  register('acpSidecar.setModel', (id) => setModel(id));
  register('acpSidecar.showTranscript', () => transcriptChannel.show(true));
  register('acpSidecar.showLog', () => logChannel.show(true));
  register('acpSidecar.restart', () => restart());

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('acpSidecar') && !e.affectsConfiguration('acpSidecar.trace')) {
        void restart();
      }
    }),
  );

  void restart();
}

export async function deactivate(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    await old.stop();
  }
}
