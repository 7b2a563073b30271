// The chat webview's script: shows the items the extension renders, sends what
// the user types. Enter sends, Shift+Enter is a new line, Stop cancels the turn.
import type { HostMessage, RenderedItem, ViewMessage, ViewState } from '../messages';

interface VsCodeApi {
  postMessage(message: ViewMessage): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const log = document.getElementById('log') as HTMLElement;
const header = document.getElementById('header') as HTMLElement;
const input = document.getElementById('input') as HTMLTextAreaElement;
const send = document.getElementById('send') as HTMLButtonElement;
const stop = document.getElementById('stop') as HTMLButtonElement;
const empty = document.getElementById('empty') as HTMLElement;
const elements = new Map<string, HTMLElement>();

function nearBottom(): boolean {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 40;
}

function upsert(items: RenderedItem[]): void {
  const follow = nearBottom();
  for (const item of items) {
    let el = elements.get(item.id);
    if (!el) {
      el = document.createElement('div');
      el.className = 'item';
      el.dataset.id = item.id;
      elements.set(item.id, el);
      log.appendChild(el);
    }
    // The HTML is made by the extension from escaped text and markdown-it without raw HTML.
    el.innerHTML = item.html;
  }
  empty.hidden = elements.size > 0;
  if (follow) {
    log.scrollTop = log.scrollHeight;
  }
}

function setState(state: ViewState): void {
  header.textContent = state.header;
  stop.hidden = !state.running;
  document.body.classList.toggle('running', state.running);
}

window.addEventListener('message', (event: MessageEvent<HostMessage>) => {
  const msg = event.data;
  switch (msg.type) {
    case 'reset':
      elements.clear();
      log.replaceChildren(empty);
      upsert(msg.items);
      setState(msg.state);
      break;
    case 'upsert':
      upsert(msg.items);
      break;
    case 'state':
      setState(msg.state);
      break;
    case 'focusInput':
      input.focus();
      break;
  }
});

function submit(): void {
  const text = input.value;
  if (!text.trim()) {
    return;
  }
  vscode.postMessage({ type: 'send', text });
  input.value = '';
}

input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit();
  }
});
send.addEventListener('click', submit);
stop.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));

log.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  const anchor = target.closest('a');
  if (anchor) {
    event.preventDefault();
    const href = anchor.getAttribute('href');
    if (href) {
      vscode.postMessage({ type: 'openLink', href });
    }
    return;
  }
  const button = target.closest('button');
  if (!button) {
    return;
  }
  const data = button.dataset;
  if (data.action === 'respond' && data.request && data.option) {
    button.disabled = true;
    vscode.postMessage({ type: 'respond', requestId: data.request, optionId: data.option });
  } else if (data.action === 'review' && data.item) {
    vscode.postMessage({ type: 'review', itemId: data.item, index: Number(data.index ?? 0) });
  }
});

vscode.postMessage({ type: 'ready' });
document.body.dataset.ready = 'true'; // listeners attached: typing now is not lost (tests wait for this)
