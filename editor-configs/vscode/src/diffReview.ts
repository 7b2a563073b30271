// Diff review: an agent's proposed file text next to the current one in VS
// Code's diff editor, with Accept / Reject (editor title buttons, the palette,
// and a notification). The left side is the file itself, so unsaved changes
// in an open editor are part of the comparison; the right side is a read-only
// virtual document (scheme `acp-proposed`) holding the proposal.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { sanitize, truncate } from './text';

export const PROPOSED_SCHEME = 'acp-proposed';
const EMPTY = 'empty';

export interface Review {
  /** Unique per proposal (a permission request or a tool call, and the file). */
  key: string;
  /** The file the agent wants to change (absolute). */
  path: string;
  newText: string;
  /** What the proposal is, e.g. the tool call's title. */
  title: string;
  accept(): Promise<void>;
  reject(): Promise<void>;
}

export class DiffReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly reviews = new Map<string, Review>();
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return uri.query === EMPTY ? '' : (this.reviews.get(uri.query)?.newText ?? '');
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
    this.reviews.set(review.key, review);
    const current = vscode.Uri.file(review.path);
    const left = (await DiffReview.exists(current))
      ? current
      : vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: review.path, query: EMPTY });
    const name = path.basename(review.path);
    await vscode.commands.executeCommand(
      'vscode.diff',
      left,
      this.proposedUri(review),
      `${name}: current ↔ agent's edit`,
      { preview: false },
    );
    const what = truncate(sanitize(review.title), 80);
    void vscode.window
      .showInformationMessage(`ACP: review the agent's edit to ${name} (${what}).`, 'Accept', 'Reject')
      .then((choice) => {
        if (choice) {
          void this.decide(choice === 'Accept', review.key);
        }
        // Dismissed: the review stays open; the diff editor's buttons still decide it.
      });
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

  /** Accepts or rejects a proposal (the active one by default) and closes its diff editor. */
  async decide(accept: boolean, key = this.activeKey()): Promise<void> {
    const review = key === undefined ? undefined : this.reviews.get(key);
    if (!review) {
      void vscode.window.showInformationMessage('ACP: no agent edit to review here (it was decided already).');
      return;
    }
    this.reviews.delete(review.key);
    await this.close(review);
    await (accept ? review.accept() : review.reject());
  }

  /** Forgets proposals that were decided elsewhere (e.g. the permission was answered). */
  forget(keyPrefix: string): void {
    for (const [key, review] of this.reviews) {
      if (key.startsWith(keyPrefix)) {
        this.reviews.delete(key);
        void this.close(review);
      }
    }
  }

  private async close(review: Review): Promise<void> {
    const proposed = this.proposedUri(review).toString();
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === proposed);
    if (tabs.length > 0) {
      await vscode.window.tabGroups.close(tabs);
    }
  }

  dispose(): void {
    this.registration.dispose();
    this.reviews.clear();
  }
}
