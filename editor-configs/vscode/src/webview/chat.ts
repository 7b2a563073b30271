// The chat webview's script: shows the conversation and the live area the
// extension renders, sends what the user types. Enter sends, Shift+Enter is a
// new line, Stop cancels the turn.
import type { HostMessage, RenderedPart, ViewMessage, ViewState } from '../messages';

interface VsCodeApi {
  postMessage(message: ViewMessage): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const log = document.getElementById('log') as HTMLElement;
const conversation = document.getElementById('conversation') as HTMLElement;
const live = document.getElementById('live') as HTMLElement;
const header = document.getElementById('header') as HTMLElement;
const input = document.getElementById('input') as HTMLTextAreaElement;
const send = document.getElementById('send') as HTMLButtonElement;
const stop = document.getElementById('stop') as HTMLButtonElement;
const empty = document.getElementById('empty') as HTMLElement;

function nearBottom(): boolean {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 40;
}

/** Blocks per page: a turn's blocks are grouped in pages (each its own layout, `contain` in
 * chat.css), so that adding a block lays out one page and the list of pages, not every block
 * of a long answer. */
const PAGE = 32;

/** The HTML is made by the extension: markdown-it without raw HTML, or escaped text. Each turn is
 * a section of pages of block elements; a change replaces a turn's blocks from its first changed
 * one on, so a growing answer costs what it adds, not its length. */
function showParts(reset: boolean, count: number, parts: RenderedPart[]): void {
  if (reset) {
    conversation.replaceChildren();
  }
  while (conversation.children.length > count) {
    conversation.lastElementChild?.remove();
  }
  for (const part of parts) {
    while (conversation.children.length <= part.index) {
      conversation.appendChild(document.createElement('section'));
    }
    const el = conversation.children[part.index] as HTMLElement;
    const cls = `turn ${part.kind}`;
    if (el.className !== cls) {
      el.className = cls;
    }
    // Keep the first `from` blocks: whole pages before the page of block `from`, and its first blocks.
    const keepPages = Math.ceil(part.from / PAGE);
    while (el.children.length > keepPages) {
      el.lastElementChild?.remove();
    }
    const partial = part.from % PAGE;
    if (partial > 0) {
      const page = el.lastElementChild as HTMLElement;
      while (page.children.length > partial) {
        page.lastElementChild?.remove();
      }
    }
    let page = el.lastElementChild as HTMLElement | null;
    for (const html of part.blocks) {
      if (page === null || page.children.length >= PAGE) {
        page = document.createElement('div');
        page.className = 'page';
        el.appendChild(page);
      }
      const block = document.createElement('div');
      block.className = 'block';
      block.innerHTML = html;
      page.appendChild(block);
    }
  }
}

function setState(state: ViewState): void {
  // Only what changed: a flush sends the state each time, and a change costs a layout.
  if (header.textContent !== state.header) {
    header.textContent = state.header;
  }
  if (stop.hidden !== !state.running) {
    stop.hidden = !state.running;
  }
  if (document.body.classList.contains('running') !== state.running) {
    document.body.classList.toggle('running', state.running);
  }
}

/** ACP_SIDECAR_VSCODE_PERF (the extension says so): how long each change takes here. */
let perf = false;
let longTask = 0;

function watchLongTasks(): void {
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        longTask = Math.max(longTask, entry.duration);
      }
    }).observe({ type: 'longtask', buffered: true });
  } catch {
    // no long-task timing here: only the changes' own durations are reported
  }
}

window.addEventListener('message', (event: MessageEvent<HostMessage>) => {
  const msg = event.data;
  const started = performance.now();
  const follow = nearBottom();
  switch (msg.type) {
    case 'conversation':
      showParts(msg.reset, msg.count, msg.parts);
      break;
    case 'perf':
      perf = true;
      watchLongTasks();
      return;
    case 'live':
      live.innerHTML = msg.html;
      break;
    case 'state':
      setState(msg.state);
      return;
    case 'focusInput':
      input.focus();
      return;
  }
  const hidden = conversation.firstElementChild !== null || live.children.length > 0;
  if (empty.hidden !== hidden) {
    empty.hidden = hidden;
  }
  if (follow) {
    log.scrollTop = log.scrollHeight;
  }
  if (perf && msg.type === 'conversation') {
    void log.scrollHeight; // the layout the change needs, done now: counted with it
    vscode.postMessage({ type: 'perf', ms: performance.now() - started, longTask });
    longTask = 0;
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
  } else if (data.action === 'review' && data.card) {
    vscode.postMessage({ type: 'review', card: data.card, index: Number(data.index ?? 0) });
  }
});

vscode.postMessage({ type: 'ready' });
document.body.dataset.ready = 'true'; // listeners attached: typing now is not lost (tests wait for this)
