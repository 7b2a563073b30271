// Permission requests of the agent (acp/permission): a non-blocking
// notification with the agent's options and, for an edit, "Review diff".
// Dismissing the notification answers nothing: the request stays pending,
// shown in the chat view and in "ACP: Answer a pending permission request…".
import * as vscode from 'vscode';
import { DiffReview } from './diffReview';
import { proposalFor, toProposals, toolCallDiffs, type FileDiff } from './proposals';
import { AcpCommand, PermissionOption, PermissionParams } from './protocol';
import type { Sidecar } from './sidecar';
import { escapeIcons, sanitize, truncate } from './text';

const REVIEW = 'Review diff';

/** The option that allows (once before always) or rejects (once before always). */
export function optionFor(options: PermissionOption[], allow: boolean): PermissionOption | undefined {
  const kinds = allow ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  for (const kind of kinds) {
    const found = options.find((o) => o.kind === kind);
    if (found) {
      return found;
    }
  }
  return undefined;
}

export class Permissions {
  private readonly pending = new Map<string, PermissionParams>();

  constructor(
    private readonly sidecar: Sidecar,
    private readonly review: DiffReview,
    /** Diffs the chat already knows for a tool call (from its tool_call updates). */
    private readonly knownDiffs: (toolCallId: string) => FileDiff[],
  ) {}

  private static title(p: PermissionParams): string {
    const title = p.toolCall && typeof p.toolCall.title === 'string' ? p.toolCall.title : 'a tool call';
    return truncate(sanitize(title), 100) || 'a tool call';
  }

  diffs(p: PermissionParams): FileDiff[] {
    const fromRequest = toolCallDiffs(p.toolCall?.content);
    const toolCallId = p.toolCall?.toolCallId;
    if (fromRequest.length > 0 || typeof toolCallId !== 'string') {
      return fromRequest;
    }
    return this.knownDiffs(toolCallId);
  }

  onPermission(p: PermissionParams): void {
    const id = String(p.requestId);
    if (p.state !== 'pending') {
      this.pending.delete(id);
      this.review.forget(`permission:${id}:`);
      return;
    }
    this.pending.set(id, p);
    const diffs = this.diffs(p);
    const options = (p.options ?? []).map((o) => truncate(sanitize(o.name), 40) || o.optionId);
    const buttons = diffs.length > 0 ? [REVIEW, ...options] : options;
    void vscode.window
      .showInformationMessage(`ACP: the agent asks to run: ${Permissions.title(p)}`, ...buttons)
      .then((choice) => {
        if (choice === undefined) {
          return; // dismissed, not rejected: still pending
        }
        if (choice === REVIEW) {
          void this.openReview(id, 0);
          return;
        }
        const option = p.options[options.indexOf(choice)];
        if (option) {
          void this.respond(id, option.optionId);
        }
      });
  }

  /** Answers a pending request; an answer that came too late says so. `edits`: the user's text of files it reviewed. */
  async respond(requestId: string, optionId: string, edits?: Array<{ path: string; text: string }>): Promise<void> {
    if (!this.pending.has(requestId)) {
      void vscode.window.showInformationMessage('ACP: that permission request was answered already.');
      return;
    }
    try {
      const args = { requestId: this.pending.get(requestId)?.requestId, optionId };
      await this.sidecar.exec(AcpCommand.permissionRespond, edits ? { ...args, edits } : args);
    } catch (err) {
      void vscode.window.showErrorMessage(`ACP: could not answer the permission request: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** Opens the diff review of a pending edit request; Accept allows it (with the user's text if changed), Reject rejects it. */
  async openReview(requestId: string, index: number): Promise<void> {
    const p = this.pending.get(requestId);
    if (!p) {
      void vscode.window.showInformationMessage('ACP: that permission request was answered already.');
      return;
    }
    const all = this.diffs(p);
    const diff = all[index];
    if (!diff) {
      return;
    }
    // Accept with the proposal changed: allowed, and the sidecar writes the user's text instead of the agent's.
    const decide = (allow: boolean) => async (text?: string): Promise<void> => {
      const option = optionFor(p.options, allow);
      if (option) {
        await this.respond(requestId, option.optionId, allow && text !== undefined ? [{ path: diff.path, text }] : undefined);
      } else {
        void vscode.window.showWarningMessage(`ACP: the agent offered no option to ${allow ? 'allow' : 'reject'} this edit.`);
      }
    };
    const toolCallId = typeof p.toolCall?.toolCallId === 'string' ? p.toolCall.toolCallId : '';
    await this.review.open({
      key: `permission:${requestId}:${index}`,
      path: diff.path,
      sessionId: p.sessionId,
      toolCallId,
      known: proposalFor(toProposals(p.proposals), diff.path),
      shown: diff,
      title: Permissions.title(p),
      accept: decide(true),
      reject: decide(false),
    });
  }

  /** A quick pick over the pending requests and their options. */
  async pick(): Promise<void> {
    const items: Array<vscode.QuickPickItem & { run: () => Promise<void> }> = [];
    for (const [id, p] of this.pending) {
      const title = Permissions.title(p);
      if (this.diffs(p).length > 0) {
        items.push({ label: `$(diff) ${REVIEW}`, description: escapeIcons(title), run: () => this.openReview(id, 0) });
      }
      for (const o of p.options) {
        items.push({ label: escapeIcons(truncate(sanitize(o.name), 60) || o.optionId), description: escapeIcons(title), run: () => this.respond(id, o.optionId) });
      }
    }
    if (items.length === 0) {
      void vscode.window.showInformationMessage('ACP: no permission request is waiting.');
      return;
    }
    const choice = await vscode.window.showQuickPick(items, { title: 'ACP: pending permission requests' });
    await choice?.run();
  }

  clear(): void {
    this.pending.clear();
  }
}
