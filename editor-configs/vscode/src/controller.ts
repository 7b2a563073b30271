// Connects the sidecar's notifications to what the user sees (status bar, chat
// view, permission notifications) and carries out what the user asks (send a
// prompt, stop, answer, review, load a session). The chat's conversation is the
// active session's conversation document, read from its file (which the sidecar
// writes as the agent answers) each time the file changes. (Not opened as a
// text document: the sidecar would keep it live through workspace/applyEdit,
// and VS Code opens every text document with unsaved changes in an editor.)
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ChatActions, ChatView } from './chatView';
import { DiffReview } from './diffReview';
import type { PendingPrompt } from './live';
import { Permissions } from './permissions';
import { AcpCommand, PromptResult, SessionInfoParams, StatusParams, ConversationDocumentResult, TurnParams } from './protocol';
import type { Sidecar } from './sidecar';
import { chatHeader, sanitize, statusBarText, statusTooltip } from './text';
import { type Piece, ConversationFileReader } from './conversationFile';

/** How long a burst of file events waits before the file is read (the sidecar writes in pieces). */
const READ_DELAY_MS = 15;

/** The most turn ids remembered as started (a long session's oldest go first). */
const MAX_TURNS = 200;
const BUSY = new Set(['running', 'cancelling', 'waiting_permission']);

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
  /** The conversation file the chat shows, watched (its directory: a rewritten file is seen too). */
  private watched:
    | { file: string; watcher: fs.FSWatcher; reader: ConversationFileReader; timer?: ReturnType<typeof setTimeout> }
    | undefined;
  private reading: Promise<void> = Promise.resolve();
  /** Bumped whenever the chat follows another session: a document opened for an older one is not shown. */
  private generation = 0;
  /** Prompts sent from here whose answer has not come yet. */
  private inflight = 0;
  /** Turns of the shown session that started (their prompt is in the document). */
  private readonly started = new Set<string>();
  private busy = false;

  constructor(
    private readonly sidecar: Sidecar,
    private readonly chat: ChatView,
    private readonly diffReview: DiffReview,
    private readonly statusItem: vscode.StatusBarItem,
  ) {
    this.permissions = new Permissions(sidecar, diffReview, (id) => this.chat.live.diffsOf(id));
    this.disposables.push(
      sidecar.onStatus((s) => this.onStatus(s)),
      sidecar.onSessionInfo((p) => this.onSessionInfo(p)),
      sidecar.onSessionUpdate((p) => {
        if (p.sessionId === this.chat.live.sessionId && this.chat.live.update(p)) {
          this.chat.changed();
        }
      }),
      sidecar.onTurn((p) => this.onTurn(p)),
      sidecar.onPermission((p) => {
        this.follow(p.sessionId);
        this.chat.live.permission(p);
        this.chat.changed();
        this.permissions.onPermission(p);
      }),
      sidecar.onStarted(() => this.permissions.clear()),
      { dispose: () => this.unwatch() },
    );
    this.onStatus(undefined);
  }

  /** The chat shows the session the sidecar works on; another session starts a fresh conversation. */
  private follow(sessionId: string | null): void {
    const live = this.chat.live;
    if (!sessionId || live.sessionId === sessionId) {
      return;
    }
    if (live.sessionId === null) {
      live.sessionId = sessionId; // the first session: what was typed before it existed stays
    } else {
      live.reset(sessionId);
      this.chat.noDocument();
    }
    this.started.clear();
    this.generation += 1;
    this.unwatch();
    void this.openDocument(sessionId, this.generation);
    this.chat.changed();
  }

  /** Finds the session's conversation document (created when missing), shows it and follows its file. */
  private async openDocument(sessionId: string, generation: number): Promise<void> {
    try {
      const t = await this.sidecar.exec<ConversationDocumentResult>(AcpCommand.sessionTranscript, { sessionId });
      if (generation !== this.generation) {
        return; // the chat follows another session by now
      }
      const file = vscode.Uri.parse(t.uri, true).fsPath;
      const watcher = fs.watch(path.dirname(file), (_event, name) => {
        if (!name || name.toString() === path.basename(file)) {
          this.readSoon();
        }
      });
      watcher.on('error', () => undefined); // the directory went away: nothing more to show
      this.unwatch();
      this.watched = { file, watcher, reader: new ConversationFileReader(file) };
      this.readSoon();
    } catch (err) {
      if (generation === this.generation) {
        this.chat.live.note(`The conversation cannot be shown: ${errorText(err)}`, 'warning');
        this.chat.changed();
      }
    }
  }

  private unwatch(): void {
    if (this.watched) {
      clearTimeout(this.watched.timer);
      this.watched.watcher.close();
      this.watched = undefined;
    }
  }

  /** Reads the watched file after a burst of changes; one read at a time, in order. */
  private readSoon(): void {
    const watched = this.watched;
    if (!watched || watched.timer !== undefined) {
      return;
    }
    watched.timer = setTimeout(() => {
      watched.timer = undefined;
      this.reading = this.reading.then(async () => {
        const started = performance.now();
        let piece: Piece;
        try {
          piece = await watched.reader.read();
        } catch {
          watched.reader.forget();
          return; // not there (yet): the next change reads it
        }
        if (this.watched === watched) {
          watched.reader.committed(piece.text, this.chat.feed(piece, performance.now() - started));
          if (this.chat.live.shown(this.started)) {
            this.chat.changed();
          }
        }
      });
    }, READ_DELAY_MS);
  }

  private onTurn(p: TurnParams): void {
    this.follow(p.sessionId);
    if (p.sessionId !== this.chat.live.sessionId || (p.state !== 'running' && p.state !== 'ended')) {
      return;
    }
    this.started.add(String(p.turnId));
    if (this.started.size > MAX_TURNS) {
      this.started.delete(this.started.values().next().value as string);
    }
    if (p.state === 'ended' && this.chat.live.shown(this.started)) {
      this.chat.changed();
    }
  }

  private setRunning(): void {
    const running = this.busy || this.inflight > 0;
    if (running !== this.chat.running) {
      this.chat.running = running;
      this.chat.changed();
    }
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
      if (s.sessionId === null && this.chat.live.sessionId !== null) {
        // A new sidecar: the old conversation can be reopened from the picker.
        this.chat.live.reset(null);
        this.generation += 1;
        this.unwatch();
        this.chat.noDocument();
        this.chat.changed();
      }
      this.follow(s.sessionId);
      this.busy = BUSY.has(String(s.state));
      this.setRunning();
      this.chat.setHeader(chatHeader(s));
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
    const live = this.chat.live;
    const pending: PendingPrompt = live.sent(text);
    this.inflight += 1;
    this.setRunning();
    this.chat.changed();
    try {
      const result = await this.sidecar.exec<PromptResult>(AcpCommand.prompt, { text, ...(context ?? {}) });
      this.follow(result.sessionId);
      live.answered(pending, String(result.turnId), result.position);
      live.shown(this.started);
    } catch (err) {
      live.answered(pending, undefined, 0, errorText(err));
    } finally {
      this.inflight -= 1;
      this.setRunning();
      this.chat.changed();
    }
  }

  stop(): void {
    void this.sidecar
      .exec<{ cancelled: boolean }>(AcpCommand.cancel, {})
      .then((r) => {
        if (!r.cancelled) {
          this.chat.live.note('Nothing is running.', 'info');
          this.chat.changed();
        }
      })
      .catch((err: unknown) => void vscode.window.showErrorMessage(`ACP: cancel: ${errorText(err)}`));
  }

  respond(requestId: string, optionId: string): void {
    void this.permissions.respond(requestId, optionId);
  }

  /** "Review diff" in the chat: a permission's edit, or a tool call's diff (Accept applies it). */
  review(card: string, index: number): void {
    const [kind, id] = [card.slice(0, card.indexOf(':')), card.slice(card.indexOf(':') + 1)];
    if (kind === 'permission') {
      void this.permissions.openReview(id, index);
      return;
    }
    const item = kind === 'edit' ? this.chat.live.edits.get(id) : undefined;
    if (!item) {
      return;
    }
    const waiting = this.chat.live.pendingPermissions().find((p) => p.toolCallId === item.toolCallId);
    if (waiting) {
      void this.permissions.openReview(waiting.requestId, index);
      return;
    }
    const diff = item.diffs[index];
    const sessionId = this.chat.live.sessionId;
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

  /** Loads a session: it becomes active, and the chat shows its conversation document (its whole history). */
  async loadSession(sessionId: string): Promise<void> {
    const result = await this.sidecar.exec<{ sessionId: string }>(AcpCommand.sessionLoad, { sessionId });
    await this.showSession(result.sessionId);
  }

  /** The chat shows session sessionId (the active one, e.g. a new fork). */
  async showSession(sessionId: string): Promise<void> {
    this.follow(sessionId);
    await this.chat.reveal();
  }

  /** Opens the active session's conversation document in an editor. */
  async openConversationDocument(): Promise<void> {
    const t = await this.sidecar.exec<ConversationDocumentResult>(AcpCommand.sessionTranscript, {});
    await vscode.window.showTextDocument(vscode.Uri.parse(t.uri, true), { preview: false });
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
