// The chat view (a webview view): the active session's conversation document
// rendered as Markdown (conversation.ts), what waits for the user below it
// (live.ts: permission requests, edits to review, prompts not shown yet), and
// an input box. Changes go to the webview at most every FLUSH_MS, each turn of
// the conversation only when its text changed; a webview that was hidden and
// comes back gets everything again.
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { RenderedConversation } from './conversation';
import { LiveArea } from './live';
import type { HostMessage, ViewMessage, ViewState } from './messages';
import { PerfProbe } from './perf';
import type { Piece } from './conversationFile';

export const CHAT_VIEW_ID = 'acpSidecar.chat';
const FLUSH_MS = 50;

/** What the chat view asks of the rest of the extension. */
export interface ChatActions {
  send(text: string): void;
  stop(): void;
  respond(requestId: string, optionId: string): void;
  review(card: string, index: number): void;
  openLink(href: string): void;
}

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  readonly live = new LiveArea();
  private readonly conversation = new RenderedConversation();
  private view: vscode.WebviewView | undefined;
  private documentDirty = false;
  /** ACP_SIDECAR_VSCODE_PERF: each flush's cost to a file (bench/vscode_flush.py). */
  private readonly perf = PerfProbe.fromEnv();
  private liveDirty = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private header = 'ACP: no session yet';
  running = false;
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
<div id="log" role="log" aria-live="polite"><div id="empty">Ask the agent something below. Enter sends, Shift+Enter adds a line.</div><div id="conversation"></div><div id="live"></div></div>
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
        this.post({ type: 'conversation', reset: true, ...this.everything() });
        this.post({ type: 'live', html: this.liveHtml() });
        this.post({ type: 'state', state: this.state() });
        if (this.perf) {
          this.post({ type: 'perf' });
        }
        break;
      case 'perf':
        this.perf?.view(Number(m.ms) || 0, Number(m.longTask) || 0);
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
        this.actions.review(String(m.card), Number(m.index) || 0);
        break;
      case 'openLink':
        this.actions.openLink(String(m.href));
        break;
    }
  }

  private everything(): { count: number; parts: ReturnType<RenderedConversation['all']> } {
    const parts = this.conversation.all();
    return { count: parts.length, parts };
  }

  private liveHtml(): string {
    return this.live.html((path) => vscode.workspace.asRelativePath(path));
  }

  private post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  private state(): ViewState {
    return { running: this.running, header: this.header };
  }

  /** The conversation document is gone (another session): nothing shown until the next piece. */
  noDocument(): void {
    this.conversation.clear();
    this.cleared = true;
    this.documentDirty = true;
    this.schedule();
  }

  /** The next piece of the conversation document (conversationFile.ts); returns how many of its
   * characters the conversation committed to (the next piece starts after them). */
  feed(piece: Piece, readMs = 0): number {
    const started = performance.now();
    const consumed = this.conversation.feed(piece.text, piece.reset);
    this.perf?.fed(performance.now() - started, readMs, piece.size);
    this.documentDirty = true;
    this.schedule();
    return consumed;
  }

  private cleared = false;

  /** Something in the live area (or the running state) changed. */
  changed(): void {
    this.liveDirty = true;
    this.schedule();
  }

  private schedule(): void {
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
    }
  }

  private flush(): void {
    this.timer = undefined;
    if (this.documentDirty) {
      const started = performance.now();
      this.documentDirty = false;
      if (this.cleared) {
        this.cleared = false;
        this.post({ type: 'conversation', reset: true, count: 0, parts: [] });
      }
      const { count, changed } = this.conversation.changes();
      this.post({ type: 'conversation', reset: false, count, parts: changed });
      this.perf?.flushed(performance.now() - started);
    }
    if (this.liveDirty) {
      this.liveDirty = false;
      this.post({ type: 'live', html: this.liveHtml() });
    }
    this.post({ type: 'state', state: this.state() });
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

  dispose(): void {
    this.perf?.dispose();
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
