// The chat view (a webview view): the active session's conversation as the
// ChatModel has it, rendered by render.ts, and an input box. Changes are sent
// to the webview in batches (a streamed answer is one update per batch, not
// per chunk); a webview that was hidden and comes back gets everything again.
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { ChatItem, ChatModel } from './chatModel';
import type { HostMessage, RenderedItem, ViewMessage, ViewState } from './messages';
import { renderItem } from './render';

function render(item: ChatItem): string {
  return renderItem(item, (path) => vscode.workspace.asRelativePath(path));
}

export const CHAT_VIEW_ID = 'acpSidecar.chat';
const FLUSH_MS = 50;

/** What the chat view asks of the rest of the extension. */
export interface ChatActions {
  send(text: string): void;
  stop(): void;
  respond(requestId: string, optionId: string): void;
  review(itemId: string, index: number): void;
  openLink(href: string): void;
}

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  readonly model = new ChatModel();
  private view: vscode.WebviewView | undefined;
  private readonly dirty = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private header = 'ACP: no session yet';
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly actions: ChatActions,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const scripts = vscode.Uri.joinPath(this.extensionUri, 'out', 'webview');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, scripts] };
    view.webview.html = this.html(view.webview, media, scripts);
    this.disposables.push(
      view.webview.onDidReceiveMessage((m: ViewMessage) => this.onMessage(m)),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
        }
      }),
    );
  }

  private html(webview: vscode.Webview, media: vscode.Uri, scripts: vscode.Uri): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const css = webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css'));
    const js = webview.asWebviewUri(vscode.Uri.joinPath(scripts, 'chat.js'));
    // No remote resources, no inline scripts: only this extension's files and the nonce'd script.
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${css}">
<title>ACP Chat</title>
</head>
<body>
<div id="header"></div>
<div id="log" role="log" aria-live="polite"><div id="empty">Ask the agent something below. Enter sends, Shift+Enter adds a line.</div></div>
<div id="composer">
<textarea id="input" rows="3" placeholder="Ask the agent… (Enter sends, Shift+Enter new line)" aria-label="Prompt"></textarea>
<button id="send" title="Send (Enter)">Send</button>
<button id="stop" class="secondary" title="Stop the running turn" hidden>Stop</button>
</div>
<script nonce="${nonce}" src="${js}"></script>
</body>
</html>`;
  }

  private onMessage(m: ViewMessage): void {
    switch (m.type) {
      case 'ready':
        this.post({ type: 'reset', items: this.model.all().map((i) => ({ id: i.id, html: render(i) })), state: this.state() });
        break;
      case 'send':
        if (typeof m.text === 'string' && m.text.trim()) {
          this.actions.send(m.text);
        }
        break;
      case 'stop':
        this.actions.stop();
        break;
      case 'respond':
        this.actions.respond(String(m.requestId), String(m.optionId));
        break;
      case 'review':
        this.actions.review(String(m.itemId), Number(m.index) || 0);
        break;
      case 'openLink':
        this.actions.openLink(String(m.href));
        break;
    }
  }

  private post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  private state(): ViewState {
    return { running: this.model.running, header: this.header, pendingPermissions: this.model.pendingPermissions().length };
  }

  /** Items changed (ids from the model): they are sent with the next batch. */
  changed(ids: string[]): void {
    for (const id of ids) {
      this.dirty.add(id);
    }
    if (ids.length > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
    }
  }

  private flush(): void {
    this.timer = undefined;
    const items: RenderedItem[] = [];
    for (const id of this.dirty) {
      const item = this.model.get(id);
      if (item) {
        items.push({ id, html: render(item) });
      }
    }
    this.dirty.clear();
    if (items.length > 0) {
      this.post({ type: 'upsert', items });
    }
    this.post({ type: 'state', state: this.state() });
  }

  /** Everything again (another session, or the history arrived first). */
  refresh(): void {
    this.dirty.clear();
    this.post({ type: 'reset', items: this.model.all().map((i) => ({ id: i.id, html: render(i) })), state: this.state() });
  }

  setHeader(header: string): void {
    this.header = header;
    this.post({ type: 'state', state: this.state() });
  }

  /** Shows the view and puts the cursor in its input box. */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    this.post({ type: 'focusInput' });
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
