// Messages between the extension host and the chat webview (both sides import this).

/** One rendered chat item: its id and its HTML (already safe: see render.ts). */
export interface RenderedItem {
  id: string;
  html: string;
}

export interface ViewState {
  /** A turn runs: the Stop button shows. */
  running: boolean;
  /** One line about the session: title and state. */
  header: string;
  /** Permission requests waiting for an answer. */
  pendingPermissions: number;
}

export type HostMessage =
  | { type: 'reset'; items: RenderedItem[]; state: ViewState }
  | { type: 'upsert'; items: RenderedItem[] }
  | { type: 'state'; state: ViewState }
  | { type: 'focusInput' };

export type ViewMessage =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'respond'; requestId: string; optionId: string }
  | { type: 'review'; itemId: string; index: number }
  | { type: 'openLink'; href: string };
