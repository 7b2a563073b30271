// Messages between the extension host and the chat webview (both sides import this).

/** A change to one turn of the conversation: its blocks from `from` on are `blocks`, each the
 * HTML of one Markdown block (already safe: see conversation.ts). */
export interface RenderedPart {
  index: number;
  kind: 'you' | 'agent' | 'other';
  from: number;
  blocks: string[];
}

export interface ViewState {
  /** A turn runs: the Stop button shows. */
  running: boolean;
  /** One line about the session: title and state. */
  header: string;
}

export type HostMessage =
  /** The conversation has `count` parts; `parts` are the ones that changed (reset: all of them). */
  | { type: 'conversation'; reset: boolean; count: number; parts: RenderedPart[] }
  /** What waits below the conversation (permission requests, edits, prompts not shown yet). */
  | { type: 'live'; html: string }
  | { type: 'state'; state: ViewState }
  | { type: 'focusInput' }
  /** ACP_SIDECAR_VSCODE_PERF is set: the view reports how long each change took it. */
  | { type: 'perf' };

export type ViewMessage =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'respond'; requestId: string; optionId: string }
  | { type: 'review'; card: string; index: number }
  | { type: 'openLink'; href: string }
  /** How long the view took for one conversation change (ms), or its longest task since the last. */
  | { type: 'perf'; ms: number; longTask: number };
