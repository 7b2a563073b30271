// Diff review: the file as it would be after the agent's edit next to the
// current one in VS Code's diff editor, with Accept / Reject (editor title
// buttons, the palette, and a notification). The left side is the file itself,
// so unsaved changes in an open editor are part of the comparison. The right
// side is the sidecar's proposal for that file (proposals.ts): the whole file
// after the agent's diffs, computed by the sidecar from the open editor's text
// (unsaved changes included); when the editor changed the document since, the
// review asks the sidecar again. It is an editable in-memory document (scheme
// `acp-proposed`): the user can take a hunk back with the diff editor's revert
// arrows or type over it, and Accept carries what it holds. When the sidecar
// has no text for the file (the diff does not fit it, or it is too large), the
// agent's old and new text are shown instead, read-only.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { isCurrent, proposalFor, type FileDiff, type Proposal } from './proposals';
import { sanitize, truncate } from './text';

export const PROPOSED_SCHEME = 'acp-proposed';
/** Read-only left sides: the agent's old text on a conflict, or nothing for a new file. */
const ORIGINAL_SCHEME = 'acp-original';
const SAVE_DELAY_MS = 300;
// About four minutes: on a loaded machine VS Code may refuse (or fail) several saves in a row,
// and a proposal left unsaved makes closing its tab ask "save?" for a file that is not on disk.
const SAVE_TRIES = 120;
const SAVE_MAX_DELAY_MS = 2000;

export interface Review {
  /** Unique per proposal (a permission request or a tool call, and the file). */
  key: string;
  /** The file the agent wants to change (absolute). */
  path: string;
  /** The tool call whose edit it is (to ask the sidecar for its proposals again). */
  sessionId: string;
  toolCallId: string;
  /** The sidecar's proposal for the file as the notification carried it, if it did. */
  known: Proposal | undefined;
  /** The diff the user asked to review: shown as it is when the sidecar has no text for the file. */
  shown: FileDiff;
  /** What the proposal is, e.g. the tool call's title. */
  title: string;
  /** `text`: the file as the user left the proposal, when it differs from the agent's; else undefined. */
  accept(text: string | undefined): Promise<void>;
  reject(): Promise<void>;
}

interface Open {
  review: Review;
  uri: vscode.Uri;
  editable: boolean;
  /** The right side as VS Code loaded it (its line ends normalized), to see whether the user changed it. */
  loaded: string;
  left: vscode.Uri;
  title: string;
}

interface Entry {
  data: Uint8Array;
  readonly: boolean;
  mtime: number;
}

/** The proposals' documents: in memory, writable unless marked read-only; nothing reaches the disk. */
class ProposalFiles implements vscode.FileSystemProvider {
  private readonly entries = new Map<string, Entry>();
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;

  set(uri: vscode.Uri, text: string, readonly: boolean): void {
    const existed = this.entries.has(uri.toString());
    this.entries.set(uri.toString(), { data: new TextEncoder().encode(text), readonly, mtime: Date.now() });
    this.changed.fire([{ type: existed ? vscode.FileChangeType.Changed : vscode.FileChangeType.Created, uri }]);
  }

  text(uri: vscode.Uri): string | undefined {
    const entry = this.entries.get(uri.toString());
    return entry && new TextDecoder().decode(entry.data);
  }

  delete(uri: vscode.Uri): void {
    this.entries.delete(uri.toString());
  }

  private entry(uri: vscode.Uri): Entry {
    const entry = this.entries.get(uri.toString());
    if (!entry) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    return entry;
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const entry = this.entry(uri);
    return {
      type: vscode.FileType.File,
      ctime: entry.mtime,
      mtime: entry.mtime,
      size: entry.data.byteLength,
      permissions: entry.readonly ? vscode.FilePermission.Readonly : undefined,
    };
  }

  readFile(uri: vscode.Uri): Uint8Array {
    return this.entry(uri).data;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    const entry = this.entry(uri); // only the proposals' own documents are saved here
    if (entry.readonly) {
      throw vscode.FileSystemError.NoPermissions(uri);
    }
    this.entries.set(uri.toString(), { data: content, readonly: false, mtime: Math.max(Date.now(), entry.mtime + 1) });
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }
}

export class DiffReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly reviews = new Map<string, Open>();
  private readonly files = new ProposalFiles();
  private readonly originals = new Map<string, string>();
  private readonly saves = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly saving = new Map<string, Promise<void>>();
  private readonly registrations: vscode.Disposable[];

  constructor(
    private readonly log: vscode.OutputChannel,
    /** acp.edit.proposals: what each file of a tool call becomes, computed now. */
    private readonly askProposals: (sessionId: string, toolCallId: string) => Promise<Proposal[]>,
  ) {
    this.registrations = [
      vscode.workspace.registerFileSystemProvider(PROPOSED_SCHEME, this.files, { isCaseSensitive: true }),
      vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, this),
      // A changed proposal is saved (to memory) at once: closing it never asks "save?".
      vscode.workspace.onDidChangeTextDocument((e) => this.saveSoon(e.document)),
    ];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.originals.get(uri.query) ?? '';
  }

  private saveSoon(doc: vscode.TextDocument): void {
    if (doc.uri.scheme !== PROPOSED_SCHEME) {
      return;
    }
    const key = doc.uri.toString();
    clearTimeout(this.saves.get(key));
    this.saves.set(
      key,
      setTimeout(() => {
        this.saves.delete(key);
        if (doc.isDirty && !doc.isClosed) {
          void this.save(doc);
        }
      }, SAVE_DELAY_MS),
    );
  }

  /** Saves a proposal to memory, one save at a time per document (VS Code refuses a save while one runs). */
  private save(doc: vscode.TextDocument): Promise<void> {
    const key = doc.uri.toString();
    const next = (this.saving.get(key) ?? Promise.resolve()).then(() => this.saveNow(doc));
    this.saving.set(key, next);
    return next;
  }

  private async saveNow(doc: vscode.TextDocument): Promise<void> {
    // A save can answer false, or fail, while VS Code still handles the last change: tried
    // again, backing off, for as long as the proposal is open and unsaved.
    let delay = SAVE_DELAY_MS;
    for (let tries = 0; tries < SAVE_TRIES && doc.isDirty && !doc.isClosed; tries++) {
      try {
        if (await doc.save()) {
          return;
        }
      } catch (err) {
        if (tries === 0) {
          this.log.appendLine(`diff review: could not keep the proposal ${doc.uri.toString()} (trying again): ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, SAVE_MAX_DELAY_MS);
    }
    if (doc.isDirty && !doc.isClosed) {
      this.log.appendLine(`diff review: VS Code kept refusing to keep the proposal ${doc.uri.toString()}; it stays unsaved`);
    }
  }

  private proposedUri(review: Review): vscode.Uri {
    return vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: review.path, query: review.key });
  }

  private static async exists(uri: vscode.Uri): Promise<boolean> {
    if (vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) {
      return true;
    }
    try {
      await vscode.workspace.fs.stat(uri);
      return true;
    } catch {
      return false;
    }
  }

  /** Opens the diff editor for a proposal, and a notification with Accept / Reject. */
  async open(review: Review): Promise<void> {
    const shown = this.reviews.get(review.key);
    if (shown?.editable && this.edited(shown) !== undefined) {
      // Opened again after the user changed the proposal (the tab was closed, or is behind
      // others): their version stays, it is not computed anew from the agent's diffs.
      await vscode.commands.executeCommand('vscode.diff', shown.left, shown.uri, shown.title, { preview: false });
      return;
    }
    const current = vscode.Uri.file(review.path);
    const proposal = await this.proposal(review, current);
    const uri = this.proposedUri(review);
    const name = path.basename(review.path);
    let left: vscode.Uri;
    let title: string;
    const fit = proposal.text === null ? 'conflict' : proposal.fit;
    if (proposal.text === null) {
      // No text for the file (the diff does not fit it as it is, or it is too large): what the agent sent, read-only.
      this.originals.set(review.key, review.shown.oldText ?? '');
      left = vscode.Uri.from({ scheme: ORIGINAL_SCHEME, path: review.path, query: review.key });
      this.files.set(uri, review.shown.newText, true);
      title = `${name}: agent's old ↔ new text (${proposal.fit === 'conflict' ? 'does not fit the file' : 'no proposal'})`;
    } else {
      this.originals.set(review.key, '');
      left = (await DiffReview.exists(current))
        ? current
        : vscode.Uri.from({ scheme: ORIGINAL_SCHEME, path: review.path, query: review.key });
      this.files.set(uri, proposal.text, false);
      title = `${name}: current ↔ agent's edit`;
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    this.reviews.set(review.key, { review, uri, editable: fit !== 'conflict', loaded: doc.getText(), left, title });
    await vscode.commands.executeCommand('vscode.diff', left, uri, title, { preview: false });
    const what = truncate(sanitize(review.title), 80);
    const message =
      fit === 'conflict'
        ? `ACP: ${proposal.fit === 'conflict' ? `the agent's edit to ${name} does not fit the file as it is now` : `no proposal for ${name}`} (${truncate(sanitize(proposal.reason ?? proposal.fit), 160)}); shown: the agent's old and new text (${what}).`
        : fit === 'applied'
          ? `ACP: ${name} already holds the agent's edit (${what}); the right side is editable.`
          : `ACP: review the agent's edit to ${name} (${what}); the right side is editable, Accept takes what it holds.`;
    void vscode.window.showInformationMessage(message, 'Accept', 'Reject').then((choice) => {
      if (choice) {
        void this.decide(choice === 'Accept', review.key);
      }
      // Dismissed: the review stays open; the diff editor's buttons still decide it.
    });
  }

  /** The sidecar's proposal for the file: the one it sent when the open document is still that version, else asked again. */
  private async proposal(review: Review, file: vscode.Uri): Promise<Proposal> {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === file.toString());
    if (review.known && isCurrent(review.known, open?.version)) {
      return review.known;
    }
    try {
      const asked = proposalFor(await this.askProposals(review.sessionId, review.toolCallId), review.path);
      if (asked) {
        return asked;
      }
    } catch (err) {
      this.log.appendLine(`diff review: acp.edit.proposals failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    return review.known ?? { path: review.path, uri: null, version: null, fit: 'unavailable', text: null, reason: 'the sidecar sent no proposal for this file' };
  }

  /** The review shown in the active editor (the diff's right side), if any. */
  private activeKey(): string | undefined {
    const uri = vscode.window.activeTextEditor?.document.uri;
    if (uri?.scheme === PROPOSED_SCHEME && this.reviews.has(uri.query)) {
      return uri.query;
    }
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
    if (tab?.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === PROPOSED_SCHEME) {
      return tab.input.modified.query;
    }
    return undefined;
  }

  /** What the user left on the right side, when it is not the agent's proposal as shown. */
  private edited(open: Open): string | undefined {
    if (!open.editable) {
      return undefined;
    }
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === open.uri.toString());
    const text = doc ? doc.getText() : this.files.text(open.uri);
    return text === undefined || text === open.loaded ? undefined : text;
  }

  /** Accepts or rejects a proposal (the active one by default) and closes its diff editor. */
  async decide(accept: boolean, key = this.activeKey()): Promise<void> {
    const open = key === undefined ? undefined : this.reviews.get(key);
    if (!open) {
      void vscode.window.showInformationMessage('ACP: no agent edit to review here (it was decided already).');
      return;
    }
    const text = this.edited(open);
    this.reviews.delete(open.review.key);
    await this.close(open);
    await (accept ? open.review.accept(text) : open.review.reject());
  }

  /** Forgets proposals that were decided elsewhere (e.g. the permission was answered). */
  forget(keyPrefix: string): void {
    for (const [key, open] of this.reviews) {
      if (key.startsWith(keyPrefix)) {
        this.reviews.delete(key);
        void this.close(open);
      }
    }
  }

  private async close(open: Open): Promise<void> {
    const proposed = open.uri.toString();
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === proposed);
    if (doc?.isDirty) {
      await this.save(doc); // to memory: closing asks nothing
    }
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === proposed);
    if (tabs.length > 0) {
      await vscode.window.tabGroups.close(tabs);
    }
    this.originals.delete(open.review.key);
    this.saving.delete(proposed);
    this.files.delete(open.uri);
  }

  dispose(): void {
    for (const registration of this.registrations) {
      registration.dispose();
    }
    for (const timer of this.saves.values()) {
      clearTimeout(timer);
    }
    this.reviews.clear();
  }
}
