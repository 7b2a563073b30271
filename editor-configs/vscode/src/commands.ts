// The palette commands (category ACP) that ask the user something first:
// prompt with the selection, rename, session picker (with fork and delete), log out,
// mode and model pickers, the agent's / commands. The choices are acp/status's (modes, models, commands).
import * as vscode from 'vscode';
import type { ChatView } from './chatView';
import type { Controller } from './controller';
import { AcpCommand, AgentEntry, ForkResult, SessionEntry } from './protocol';
import type { Sidecar } from './sidecar';
import { SessionPick, escapeIcons, sanitize, sessionPick, truncate, validChoices, validCommands } from './text';

// The session picker's row buttons.
const FORK_BUTTON: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('repo-forked'), tooltip: 'Fork session' };
const DELETE_BUTTON: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Delete session…' };

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs a palette command; a failure is one error notification. */
export async function guarded(name: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    void vscode.window.showErrorMessage(`ACP: ${name}: ${errorText(err)}`);
  }
}

export class Commands {
  constructor(
    private readonly sidecar: Sidecar,
    private readonly controller: Controller,
    private readonly chat: ChatView,
  ) {}

  /** Asks for a prompt (the selection, if any, goes along as context) and shows the answer in the chat. */
  async prompt(textArg?: unknown): Promise<void> {
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
    await this.sidecar.ensureStarted();
    const context =
      editor && selection ? { uri: editor.document.uri.toString(), range: this.sidecar.asRange(selection) } : undefined;
    await this.chat.reveal();
    await this.controller.prompt(text, context);
  }

  async rename(titleArg?: unknown): Promise<void> {
    let title = typeof titleArg === 'string' ? titleArg : undefined;
    if (!title) {
      await this.sidecar.ensureStarted();
      title = await vscode.window.showInputBox({
        prompt: 'New title of the active session',
        value: sanitize(this.sidecar.status?.title),
        ignoreFocusOut: true,
      });
    }
    if (title && title.trim()) {
      await this.sidecar.exec(AcpCommand.sessionRename, { title: title.trim() });
    }
  }

  /** The cached sessions, newest first as the sidecar orders them (none: says so and returns []). */
  private async listSessions(refresh: boolean): Promise<SessionEntry[]> {
    const res = await this.sidecar.exec<{ sessions: SessionEntry[]; more?: boolean }>(
      AcpCommand.sessionList,
      refresh ? { refresh: true } : {},
    );
    const entries = res.sessions ?? [];
    this.olderSessions = res.more === true;
    if (entries.length === 0) {
      void vscode.window.showInformationMessage('ACP: no sessions yet. Send a prompt from the chat view to start one.');
    }
    return entries;
  }

  /** The last list held only the newest sessions: older ones exist. */
  private olderSessions = false;

  /**
   * The session picker: the cached sessions, newest first; the chosen one is loaded with its
   * history. Each row's buttons fork it or delete it (after asking).
   */
  async sessions(refresh: boolean): Promise<void> {
    const entries = await this.listSessions(refresh);
    if (entries.length === 0) {
      return;
    }
    const picker = vscode.window.createQuickPick<SessionPick>();
    // The sidecar sends the newest ones (a bounded answer); workspace symbols search them all.
    picker.title = this.olderSessions
      ? `ACP sessions: the newest ${entries.length} (older ones: Go to Symbol in Workspace, Ctrl+T)`
      : 'ACP sessions';
    picker.placeholder = 'Load a session';
    picker.matchOnDescription = true;
    picker.matchOnDetail = true;
    picker.items = entries.map((e) => ({ ...sessionPick(e), buttons: [FORK_BUTTON, DELETE_BUTTON] }));
    const chosen = await new Promise<{ pick: SessionPick; button?: vscode.QuickInputButton } | undefined>((resolve) => {
      picker.onDidAccept(() => {
        const pick = picker.selectedItems[0];
        resolve(pick ? { pick } : undefined);
        picker.hide();
      });
      picker.onDidTriggerItemButton((e) => {
        resolve({ pick: e.item, button: e.button });
        picker.hide();
      });
      picker.onDidHide(() => resolve(undefined));
      picker.show();
    });
    picker.dispose();
    if (!chosen) {
      return;
    }
    const entry = entries.find((e) => e.sessionId === chosen.pick.sessionId);
    if (chosen.button === DELETE_BUTTON) {
      await guarded('Delete session', () => this.deleteSession(chosen.pick.sessionId, entry?.title));
    } else if (chosen.button === FORK_BUTTON) {
      await guarded('Fork session', () => this.forkSession(chosen.pick.sessionId));
    } else {
      await this.controller.loadSession(chosen.pick.sessionId);
    }
  }

  /** Deletes a session after a modal question (no id: a session picker asks which one). */
  async deleteSession(idArg?: unknown, knownTitle?: string | null): Promise<void> {
    let sessionId = typeof idArg === 'string' && idArg ? idArg : undefined;
    let title = knownTitle;
    if (!sessionId) {
      const entries = await this.listSessions(false);
      if (entries.length === 0) {
        return;
      }
      const pick = await vscode.window.showQuickPick(entries.map(sessionPick), {
        title: 'ACP: delete session',
        placeHolder: 'Delete which session?',
        matchOnDescription: true,
        matchOnDetail: true,
      });
      if (!pick) {
        return;
      }
      sessionId = pick.sessionId;
      title = entries.find((e) => e.sessionId === sessionId)?.title;
    }
    const name = truncate(sanitize(title), 80) || 'untitled';
    const answer = await vscode.window.showWarningMessage(
      `Delete the session "${name}"?`,
      { modal: true, detail: 'The agent forgets it, and its title and conversation document are removed here.' },
      'Delete',
    );
    if (answer !== 'Delete') {
      return;
    }
    await this.sidecar.exec(AcpCommand.sessionDelete, { sessionId });
    void vscode.window.showInformationMessage(`ACP: deleted the session "${name}".`);
  }

  /** Forks a session (default: the active one); the new one becomes active and shows in the chat. */
  async forkSession(idArg?: unknown): Promise<void> {
    await this.sidecar.ensureStarted();
    const arg = typeof idArg === 'string' && idArg ? { sessionId: idArg } : {};
    const fork = await this.sidecar.exec<ForkResult>(AcpCommand.sessionFork, arg);
    await this.controller.showSession(fork.sessionId);
  }

  /** Logs out of an agent: with named agents configured, asks which one. */
  async logout(agentArg?: unknown): Promise<void> {
    await this.sidecar.ensureStarted();
    let agent = typeof agentArg === 'string' && agentArg ? agentArg : undefined;
    if (!agent && this.namedAgents()) {
      agent = await this.pickAgent('ACP: log out', 'Log out of which agent?');
      if (!agent) {
        return;
      }
    }
    await this.sidecar.exec(AcpCommand.logout, agent ? { agent } : {});
    void vscode.window.showInformationMessage(`ACP: logged out of ${agent ? sanitize(agent) : 'the agent'}.`);
  }

  private namedAgents(): boolean {
    const named = vscode.workspace.getConfiguration('acpSidecar').get<Record<string, unknown>>('agents', {});
    return !!named && Object.keys(named).length > 0;
  }

  /** A QuickPick of the configured agents (acp.agents); their name, or undefined when dismissed. */
  private async pickAgent(title: string, placeHolder: string): Promise<string | undefined> {
    const listed = await this.sidecar.exec<{ agents?: AgentEntry[] }>(AcpCommand.agents);
    const agents = Array.isArray(listed?.agents) ? listed.agents : [];
    const pick = await vscode.window.showQuickPick(
      agents.map((a) => ({
        label: escapeIcons(sanitize(a.name)),
        description: [sanitize(a.title), a.default ? 'default' : undefined].filter(Boolean).join(' · '),
        detail: a.state === 'error' && a.message ? `error: ${sanitize(a.message)}` : sanitize(a.state),
        name: a.name,
      })),
      { title, placeHolder },
    );
    return pick?.name;
  }

  async newSession(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const folder = editor ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
    const arg: Record<string, unknown> = folder && folder.uri.scheme === 'file' ? { cwd: folder.uri.fsPath } : {};
    // With named agents configured (acpSidecar.agents), ask which one: the sidecar lists them.
    if (this.namedAgents()) {
      const agent = await this.pickAgent('ACP: new session', 'Start the session with which agent?');
      if (!agent) {
        return;
      }
      arg.agent = agent;
    }
    await this.sidecar.exec(AcpCommand.sessionNew, arg);
    await this.chat.reveal();
  }

  /** An id from the choices acp/status offers (a command argument, else a quick pick; free text when none). */
  private async pickId(kind: 'mode' | 'model', arg: unknown): Promise<string | undefined> {
    if (typeof arg === 'string' && arg) {
      return arg;
    }
    await this.sidecar.ensureStarted();
    const status = this.sidecar.status;
    const choices = validChoices(kind === 'mode' ? status?.modes : status?.models) ?? [];
    const current = kind === 'mode' ? status?.modeId : status?.modelId;
    if (choices.length === 0) {
      return vscode.window.showInputBox({ prompt: `ACP: ${kind} id`, value: current ?? '' });
    }
    const pick = await vscode.window.showQuickPick(
      choices.map((c) => ({
        label: escapeIcons(truncate(sanitize(c.name) || c.id, 60)),
        description: (c.id === current ? 'current · ' : '') + escapeIcons(sanitize(c.id)),
        id: c.id,
      })),
      { title: `ACP: set the session's ${kind}` },
    );
    return pick?.id;
  }

  async setMode(arg?: unknown): Promise<void> {
    const id = await this.pickId('mode', arg);
    if (id) {
      await this.sidecar.exec(AcpCommand.sessionSetMode, { modeId: id });
    }
  }

  async setModel(arg?: unknown): Promise<void> {
    const id = await this.pickId('model', arg);
    if (id) {
      await this.sidecar.exec(AcpCommand.sessionSetModel, { modelId: id });
    }
  }

  /** The agent's `/` commands (acp/status `commands`): the chosen one is sent as a prompt, with its input if it takes one. */
  async agentCommand(): Promise<void> {
    await this.sidecar.ensureStarted();
    const commands = validCommands(this.sidecar.status?.commands);
    if (commands.length === 0) {
      void vscode.window.showInformationMessage('ACP: the agent offers no / commands (for this session).');
      return;
    }
    const pick = await vscode.window.showQuickPick(
      commands.map((c) => ({ label: `/${escapeIcons(c.name)}`, description: escapeIcons(c.description), command: c })),
      { title: "ACP: the agent's commands", matchOnDescription: true },
    );
    if (!pick) {
      return;
    }
    let text = `/${pick.command.name}`;
    if (pick.command.hint) {
      const input = await vscode.window.showInputBox({ prompt: `/${pick.command.name}`, placeHolder: pick.command.hint, ignoreFocusOut: true });
      if (input === undefined) {
        return;
      }
      text = input.trim() ? `${text} ${input.trim()}` : text;
    }
    await this.chat.reveal();
    await this.controller.prompt(text);
  }
}
