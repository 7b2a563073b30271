// Messages between the extension host and the chat webview (both sides import this).

/** One rendered turn of the conversation (its HTML is already safe: see conversation.ts). */
export interface RenderedPart {
  index: number;
  kind: 'you' | 'agent' | 'other';
  html: string;
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
  | { type: 'focusInput' };

export type ViewMessage =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'respond'; requestId: string; optionId: string }
  | { type: 'review'; card: string; index: number }
  | { type: 'openLink'; href: string };
