// The agent's questions (acp/elicitation): each field asked in turn, a
// QuickPick for choices and yes/no, an InputBox for text and numbers, then
// answered with acp.elicitation.respond. The sidecar read the form and checks
// and converts the answers (typed "4" or "yes" is fine); when it refuses one,
// the error names the field and the question is asked again. Escape at any
// field declines the whole question. A URL is opened only after "Open".
import * as vscode from 'vscode';
import { AcpCommand, ElicitationField, ElicitationParams } from './protocol';
import { Sidecar } from './sidecar';

const NO_ANSWER = '(no answer)';

interface Asking {
  question: ElicitationParams;
  cancel: vscode.CancellationTokenSource;
}

export class Questions implements vscode.Disposable {
  private readonly asking = new Map<string, Asking>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly sidecar: Sidecar, private readonly log: vscode.OutputChannel) {
    this.subscription = sidecar.onElicitation((p) => this.onElicitation(p));
  }

  private onElicitation(p: ElicitationParams): void {
    if (p.state === 'pending') {
      const cancel = new vscode.CancellationTokenSource();
      this.asking.set(p.elicitationId, { question: p, cancel });
      void this.ask(p.elicitationId);
    } else if (p.state === 'resolved') {
      // Answered (or cancelled) elsewhere: close whatever is still asking.
      this.asking.get(p.elicitationId)?.cancel.cancel();
      this.asking.delete(p.elicitationId);
    }
  }

  private async ask(id: string): Promise<void> {
    const asking = this.asking.get(id);
    if (!asking) {
      return;
    }
    const { question: q, cancel } = asking;
    if (q.mode === 'url' && q.url) {
      const choice = await vscode.window.showInformationMessage(`ACP: the agent asks you to open ${q.url}: ${q.message}`, 'Open', 'Decline');
      if (!this.asking.has(id)) {
        return;
      }
      if (choice !== 'Open') {
        return this.respond(id, { action: 'decline' });
      }
      await vscode.env.openExternal(vscode.Uri.parse(q.url, true));
      return this.respond(id, { action: 'accept' });
    }
    const content: Record<string, unknown> = {};
    for (const field of q.fields ?? []) {
      const answer = await this.field(q, field, cancel.token);
      if (!this.asking.has(id)) {
        return;
      }
      if (answer === undefined) {
        return this.respond(id, { action: 'decline' });
      }
      if (answer !== null && answer !== '') {
        content[field.name] = answer;
      }
    }
    await this.respond(id, { action: 'accept', content });
  }

  /** One field's answer: undefined when the user pressed Escape, null for "no answer". */
  private async field(q: ElicitationParams, f: ElicitationField, token: vscode.CancellationToken): Promise<unknown> {
    const title = `ACP: ${q.message}`;
    const placeHolder = f.description ? `${f.title}: ${f.description}` : f.title;
    if (f.kind === 'enum' || f.kind === 'boolean' || f.kind === 'multiselect') {
      const options = f.kind === 'boolean' ? [{ value: true, title: 'Yes' }, { value: false, title: 'No' }] : (f.options ?? []);
      const items = options.map((o) => ({ label: o.title, value: o.value as unknown }));
      if (f.kind === 'multiselect') {
        const picked = await vscode.window.showQuickPick(items, { title, placeHolder, canPickMany: true, ignoreFocusOut: true }, token);
        return picked?.map((i) => i.value);
      }
      const list = f.required ? items : [{ label: NO_ANSWER, value: null as unknown }, ...items];
      const picked = await vscode.window.showQuickPick(list, { title, placeHolder, ignoreFocusOut: true }, token);
      return picked?.value;
    }
    const value = f.default === undefined || f.default === null ? '' : String(f.default);
    return vscode.window.showInputBox({ title, prompt: placeHolder, value, ignoreFocusOut: true }, token);
  }

  private async respond(id: string, answer: Record<string, unknown>): Promise<void> {
    try {
      await this.sidecar.exec(AcpCommand.elicitationRespond, { elicitationId: id, ...answer });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.appendLine(`acp.elicitation.respond: ${message}`);
      if (this.asking.has(id) && message.includes('still open')) {
        void vscode.window.showWarningMessage(`ACP: ${message}`);
        return this.ask(id); // asked again, from the first field
      }
    }
  }

  dispose(): void {
    this.subscription.dispose();
    for (const a of this.asking.values()) {
      a.cancel.cancel();
    }
    this.asking.clear();
  }
}
