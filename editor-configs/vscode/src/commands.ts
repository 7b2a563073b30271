// The palette commands (category ACP) that ask the user something first:
// prompt with the selection, rename, session picker, mode and model pickers, the
// agent's / commands. The choices are acp/status's (modes, models, commands).
import * as vscode from 'vscode';
import type { ChatView } from './chatView';
import type { Controller } from './controller';
import { AcpCommand, SessionEntry } from './protocol';
import type { Sidecar } from './sidecar';
import { escapeIcons, sanitize, sessionPick, truncate, validChoices, validCommands } from './text';

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

  /** The session picker: the cached sessions, newest first; the chosen one is loaded with its history. */
  async sessions(refresh: boolean): Promise<void> {
    const res = await this.sidecar.exec<{ sessions: SessionEntry[] }>(AcpCommand.sessionList, refresh ? { refresh: true } : {});
    const entries = [...(res.sessions ?? [])].sort((a, b) => String(b.updatedAt ?? '').localeCompare(String(a.updatedAt ?? '')));
    if (entries.length === 0) {
      void vscode.window.showInformationMessage('ACP: no sessions yet. Send a prompt from the chat view to start one.');
      return;
    }
    const pick = await vscode.window.showQuickPick(entries.map(sessionPick), {
      title: 'ACP sessions',
      placeHolder: 'Load a session',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (pick) {
      await this.controller.loadSession(pick.sessionId);
    }
  }

  async newSession(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const folder = editor ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
    await this.sidecar.exec(AcpCommand.sessionNew, folder && folder.uri.scheme === 'file' ? { cwd: folder.uri.fsPath } : {});
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
