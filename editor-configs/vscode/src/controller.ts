// Connects the sidecar's notifications to what the user sees (status bar, chat
// view, permission notifications) and carries out what the user asks (send a
// prompt, stop, answer, review, load a session with its history).
import * as vscode from 'vscode';
import type { ChatActions, ChatView } from './chatView';
import { FileDiff, transcriptHistory } from './chatModel';
import { DiffReview } from './diffReview';
import { Permissions } from './permissions';
import { AcpCommand, PromptResult, SessionInfoParams, StatusParams, TranscriptResult } from './protocol';
import type { Sidecar } from './sidecar';
import { STATE_WORDS, sanitize, statusBarText, statusTooltip, truncate } from './text';

/** The most of a transcript document the chat view shows (its tail); the document has it all. */
const MAX_HISTORY_BYTES = 1024 * 1024;

/** The user's version of a file, through the editor like the user's own typing (unsaved), not to disk. */
async function replaceText(uri: vscode.Uri, text: string): Promise<boolean> {
  const edit = new vscode.WorkspaceEdit();
  let doc: vscode.TextDocument | undefined;
  try {
    doc = await vscode.workspace.openTextDocument(uri);
  } catch {
    doc = undefined; // no such file yet
  }
  if (doc) {
    edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), text);
  } else {
    edit.createFile(uri, { ignoreIfExists: true });
    edit.insert(uri, new vscode.Position(0, 0), text);
  }
  return vscode.workspace.applyEdit(edit);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class Controller implements ChatActions, vscode.Disposable {
  readonly permissions: Permissions;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly sidecar: Sidecar,
    private readonly chat: ChatView,
    private readonly diffReview: DiffReview,
    private readonly statusItem: vscode.StatusBarItem,
  ) {
    this.permissions = new Permissions(sidecar, diffReview, (id) => this.toolDiffs(id));
    this.disposables.push(
      sidecar.onStatus((s) => this.onStatus(s)),
      sidecar.onSessionInfo((p) => this.onSessionInfo(p)),
      sidecar.onSessionUpdate((p) => {
        this.follow(p.sessionId);
        this.chat.changed(this.chat.model.update(p));
      }),
      sidecar.onTurn((p) => this.chat.changed(this.chat.model.turn(p))),
      sidecar.onPermission((p) => {
        this.follow(p.sessionId);
        this.chat.changed(this.chat.model.permission(p));
        this.permissions.onPermission(p);
      }),
      sidecar.onStarted(() => this.permissions.clear()),
    );
    this.onStatus(undefined);
  }

  private toolDiffs(toolCallId: string): FileDiff[] {
    const item = this.chat.model.get(`tool-${toolCallId}`);
    return item && item.kind === 'tool' ? item.diffs : [];
  }

  /** The chat shows the session the sidecar works on; another session starts a fresh conversation. */
  private follow(sessionId: string | null): void {
    const model = this.chat.model;
    if (!sessionId || model.sessionId === sessionId) {
      return;
    }
    if (model.sessionId === null) {
      model.sessionId = sessionId; // the first session: what was typed before it existed stays
      return;
    }
    model.reset(sessionId);
    this.chat.refresh();
  }

  private onStatus(s: StatusParams | undefined): void {
    this.statusItem.text = statusBarText(s);
    this.statusItem.tooltip = statusTooltip(s);
    this.statusItem.backgroundColor =
      s?.state === 'error' || s?.state === 'disconnected'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : s?.state === 'waiting_permission'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    this.statusItem.show();
    if (s) {
      if (s.sessionId === null && this.chat.model.sessionId !== null) {
        this.chat.model.reset(null); // a new sidecar: the old conversation can be reopened from the picker
        this.chat.refresh();
      }
      this.follow(s.sessionId);
      const title = truncate(sanitize(s.title), 80) || (s.sessionId ? 'untitled session' : 'no session yet');
      const state = STATE_WORDS[sanitize(s.state)] ?? sanitize(s.state);
      this.chat.setHeader(`${title} · ${state}`);
    }
  }

  private onSessionInfo(p: SessionInfoParams): void {
    if (p.renameState === 'changed') {
      void vscode.window.showInformationMessage(`ACP: the agent chose another title: ${sanitize(p.title)}`);
    } else if (p.renameState === 'unconfirmed') {
      void vscode.window.showWarningMessage(
        `ACP: the agent did not confirm the rename; the title is now: ${sanitize(p.title)}`,
      );
    }
  }

  // ------------------------------------------------------------------ ChatActions

  send(text: string, context?: { uri: string; range: unknown }): void {
    void this.prompt(text, context);
  }

  /** Sends a prompt; it shows in the chat at once, the answer streams below it. */
  async prompt(text: string, context?: { uri: string; range: unknown }): Promise<void> {
    const model = this.chat.model;
    this.chat.changed(model.localPrompt(text));
    try {
      const result = await this.sidecar.exec<PromptResult>(AcpCommand.prompt, { text, ...(context ?? {}) });
      this.follow(result.sessionId);
      this.chat.changed(model.promptAnswered(result));
    } catch (err) {
      this.chat.changed(model.promptAnswered(undefined, errorText(err)));
    }
  }

  stop(): void {
    void this.sidecar
      .exec<{ cancelled: boolean }>(AcpCommand.cancel, {})
      .then((r) => {
        if (!r.cancelled) {
          this.chat.changed([this.chat.model.note('Nothing is running.', 'info')]);
        }
      })
      .catch((err: unknown) => void vscode.window.showErrorMessage(`ACP: cancel: ${errorText(err)}`));
  }

  respond(requestId: string, optionId: string): void {
    void this.permissions.respond(requestId, optionId);
  }

  /** "Review diff" in the chat: a permission's edit, or a tool call's diff (Accept applies it). */
  review(itemId: string, index: number): void {
    const item = this.chat.model.get(itemId);
    if (item?.kind === 'permission') {
      void this.permissions.openReview(item.requestId, index);
      return;
    }
    if (item?.kind !== 'tool') {
      return;
    }
    const waiting = this.chat.model.pendingPermissions().find((p) => p.toolCallId === item.toolCallId);
    if (waiting) {
      void this.permissions.openReview(waiting.requestId, index);
      return;
    }
    const diff = item.diffs[index];
    const sessionId = this.chat.model.sessionId;
    if (!diff || !sessionId) {
      return;
    }
    void this.diffReview.open({
      key: `tool:${item.toolCallId}:${index}`,
      path: diff.path,
      sessionId,
      toolCallId: item.toolCallId,
      known: undefined, // asked of the sidecar when the review opens
      shown: diff,
      title: item.title,
      accept: async (text) => {
        try {
          // The proposal as the agent made it: the sidecar applies the tool call's diffs.
          const applied =
            text === undefined
              ? (await this.sidecar.exec<{ applied: boolean }>(AcpCommand.editApply, { sessionId, toolCallId: item.toolCallId })).applied
              : await replaceText(vscode.Uri.file(diff.path), text);
          if (!applied) {
            void vscode.window.showWarningMessage('ACP: the edit could not be applied.');
          }
        } catch (err) {
          void vscode.window.showErrorMessage(`ACP: applying the edit: ${errorText(err)}`);
        }
      },
      reject: async () => undefined, // nothing was applied
    });
  }

  openLink(href: string): void {
    let uri: vscode.Uri;
    try {
      uri = vscode.Uri.parse(href, true);
    } catch {
      return;
    }
    if (uri.scheme === 'http' || uri.scheme === 'https') {
      void vscode.env.openExternal(uri); // VS Code asks the user before opening an outside link
    } else if (uri.scheme === 'file') {
      void vscode.window.showTextDocument(uri, { preview: true });
    }
  }

  // ------------------------------------------------------------------ sessions

  /** Loads a session: it becomes active, and the chat shows its stored history. */
  async loadSession(sessionId: string): Promise<void> {
    const result = await this.sidecar.exec<{ sessionId: string }>(AcpCommand.sessionLoad, { sessionId });
    this.follow(result.sessionId);
    await this.showHistory(result.sessionId);
    if (this.chat.model.all().length === 0) {
      this.chat.changed([
        this.chat.model.note('Session loaded. This sidecar keeps no transcript of it, so earlier messages are not shown.', 'info'),
      ]);
    }
    await this.chat.reveal();
  }

  /** The stored conversation (transcript document) of a session, when the sidecar keeps one. */
  private async showHistory(sessionId: string): Promise<void> {
    if (!this.sidecar.features.transcripts) {
      return; // an older sidecar: the replay of session/load (if any) is the history
    }
    try {
      const t = await this.sidecar.exec<TranscriptResult>(AcpCommand.sessionTranscript, { sessionId });
      let bytes = await vscode.workspace.fs.readFile(vscode.Uri.parse(t.uri, true));
      const cut = bytes.length > MAX_HISTORY_BYTES;
      if (cut) {
        bytes = bytes.slice(bytes.length - MAX_HISTORY_BYTES);
      }
      let text = transcriptHistory(new TextDecoder('utf-8').decode(bytes));
      if (cut) {
        text = `*(The start is in the transcript document: "ACP: Open the session transcript document".)*\n\n${text.slice(text.indexOf('\n') + 1)}`;
      }
      if (this.chat.model.sessionId === sessionId) {
        this.chat.model.setHistory(text);
        this.chat.refresh();
      }
    } catch (err) {
      this.chat.changed([this.chat.model.note(`The stored history could not be read: ${errorText(err)}`, 'warning')]);
    }
  }

  /** Opens the active session's transcript document in an editor. */
  async openTranscript(): Promise<void> {
    if (!this.sidecar.features.transcripts) {
      void vscode.window.showInformationMessage(
        'ACP: this sidecar keeps no transcript documents (it predates them); the chat view shows the conversation.',
      );
      await this.chat.reveal();
      return;
    }
    const t = await this.sidecar.exec<TranscriptResult>(AcpCommand.sessionTranscript, {});
    await vscode.window.showTextDocument(vscode.Uri.parse(t.uri, true), { preview: false });
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
