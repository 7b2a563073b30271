// The palette commands (category ACP) that ask the user something first:
// prompt with the selection, rename, session picker, mode and model pickers.
import * as vscode from 'vscode';
import type { ChatView } from './chatView';
import type { Controller } from './controller';
import { AcpCommand, Choice, SessionEntry } from './protocol';
import type { Sidecar } from './sidecar';
import { currentId, escapeIcons, offeredIds, sanitize, sessionPick, truncate, validChoices } from './text';

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

export class Commands implements vscode.Disposable {
  private readonly subscription: vscode.Disposable;
  /** Mode and model ids seen in updates, for sidecars whose acp/status has no `modes`/`models`. */
  private readonly seen = { mode: new Set<string>(), model: new Set<string>() };

  constructor(
    private readonly sidecar: Sidecar,
    private readonly controller: Controller,
    private readonly chat: ChatView,
  ) {
    this.subscription = sidecar.onSessionUpdate((p) => {
      const u = p.update ?? {};
      if (u.sessionUpdate === 'config_option_update' && Array.isArray(u.configOptions)) {
        for (const opt of u.configOptions as Array<Record<string, unknown>>) {
          if (opt && (opt.category === 'mode' || opt.category === 'model')) {
            offeredIds(opt).forEach((id) => this.seen[opt.category as 'mode' | 'model'].add(id));
          }
        }
      } else if (u.sessionUpdate === 'current_mode_update') {
        const id = currentId(u);
        if (id) {
          this.seen.mode.add(id);
        }
      }
    });
  }

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

  private async pickId(kind: 'mode' | 'model', arg: unknown): Promise<string | undefined> {
    if (typeof arg === 'string' && arg) {
      return arg;
    }
    await this.sidecar.ensureStarted();
    const status = this.sidecar.status;
    const offered: Choice[] | undefined = validChoices(kind === 'mode' ? status?.modes : status?.models);
    const current = (kind === 'mode' ? status?.modeId : status?.modelId) ?? currentId(kind === 'mode' ? status?.mode : status?.model);
    const choices = offered ?? [...this.seen[kind]].map((id) => ({ id, name: id }));
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

  dispose(): void {
    this.subscription.dispose();
  }

  async setModel(arg?: unknown): Promise<void> {
    const id = await this.pickId('model', arg);
    if (id) {
      await this.sidecar.exec(AcpCommand.sessionSetModel, { modelId: id });
    }
  }
}
