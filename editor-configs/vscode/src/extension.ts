// VS Code client for acp-sidecar. Activated by the first ACP command or by
// opening the chat view (not at start-up): the sidecar, and its agent, start
// then. Status bar, chat view, permission notifications with diff review.
import * as vscode from 'vscode';
import { CHAT_VIEW_ID, ChatView } from './chatView';
import { Commands, guarded } from './commands';
import { Controller } from './controller';
import { DiffReview } from './diffReview';
import { toProposals } from './proposals';
import { AcpCommand } from './protocol';
import { Questions } from './questions';
import { Sidecar } from './sidecar';

let sidecar: Sidecar | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('ACP Sidecar');
  const statusItem = vscode.window.createStatusBarItem('acpSidecar.status', vscode.StatusBarAlignment.Left, 100);
  statusItem.name = 'ACP session';
  statusItem.command = 'acpSidecar.sessions';
  const running = new Sidecar(log);
  sidecar = running;
  const review = new DiffReview(log, async (sessionId, toolCallId) =>
    toProposals((await running.exec<{ proposals?: unknown }>(AcpCommand.editProposals, { sessionId, toolCallId })).proposals),
  );
  // The controller is created right below; the view only calls it after the webview exists.
  let controller: Controller | undefined;
  const chat = new ChatView(context.extensionUri, {
    send: (text) => controller?.send(text),
    stop: () => controller?.stop(),
    respond: (requestId, optionId) => controller?.respond(requestId, optionId),
    review: (card, index) => controller?.review(card, index),
    openLink: (href) => controller?.openLink(href),
  });
  controller = new Controller(running, chat, review, statusItem);
  const commands = new Commands(running, controller, chat);
  const ctl = controller;
  const questions = new Questions(running, log);
  context.subscriptions.push(log, statusItem, running, review, chat, ctl, questions);
  context.subscriptions.push(vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat));

  const register = (id: string, fn: (...args: unknown[]) => Promise<void>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, (...args: unknown[]) => guarded(id, () => fn(...args))));
  register('acpSidecar.openChat', () => chat.reveal());
  register('acpSidecar.prompt', (text) => commands.prompt(text));
  register('acpSidecar.cancel', async () => ctl.stop());
  register('acpSidecar.rename', (title) => commands.rename(title));
  register('acpSidecar.sessions', () => commands.sessions(false));
  register('acpSidecar.refreshSessions', () => commands.sessions(true));
  register('acpSidecar.newSession', () => commands.newSession());
  register('acpSidecar.deleteSession', (id) => commands.deleteSession(id));
  register('acpSidecar.forkSession', (id) => commands.forkSession(id));
  register('acpSidecar.logout', (agent) => commands.logout(agent));
  register('acpSidecar.setMode', (id) => commands.setMode(id));
  register('acpSidecar.setModel', (id) => commands.setModel(id));
  register('acpSidecar.agentCommand', () => commands.agentCommand());
  register('acpSidecar.showTranscript', () => ctl.openConversationDocument());
  register('acpSidecar.showLog', async () => log.show(true));
  register('acpSidecar.restart', () => running.restart());
  register('acpSidecar.permissions', () => ctl.permissions.pick());
  register('acpSidecar.acceptDiff', () => review.decide(true));
  register('acpSidecar.rejectDiff', () => review.decide(false));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('acpSidecar') && !e.affectsConfiguration('acpSidecar.trace') && running.running) {
        void running.restart();
      }
    }),
  );

  // Activation means the user wants the agent now (a command or the chat view).
  void running.ensureStarted();
}

export async function deactivate(): Promise<void> {
  const running = sidecar;
  sidecar = undefined;
  await running?.shutdown();
}
