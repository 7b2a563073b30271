// The sidecar's edit proposals (docs/protocol.md, "Agent diffs"): per file of a
// tool call, what the file becomes after the agent's diffs, computed by the
// sidecar from the open document (with its version) or the disk. The review
// shows them and computes nothing; a document edited since they were computed
// asks again (acp.edit.proposals). Kept free of `vscode` for the unit tests.

export type Fit = 'applies' | 'applied' | 'conflict' | 'unavailable';

export interface Proposal {
  path: string;
  uri: string | null;
  /** The LSP version of the open document it was computed from; null: from the disk. */
  version: number | null;
  /** applies: `text` is the file after the edit; applied: the file holds it already; conflict / unavailable: no text. */
  fit: Fit;
  /** The whole file after the edit; null on a conflict, for a file not read, or past the sidecar's size bound. */
  text: string | null;
  /** Why `text` is null (for the user). */
  reason: string | null;
}

const FITS: readonly string[] = ['applies', 'applied', 'conflict', 'unavailable'];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The proposals of a notification or of acp.edit.proposals; what does not have the protocol's shape is left out. */
export function toProposals(raw: unknown): Proposal[] {
  if (!Array.isArray(raw)) {
    return [];
  }
  const out: Proposal[] = [];
  for (const p of raw) {
    if (!isRecord(p) || typeof p.path !== 'string' || typeof p.fit !== 'string' || !FITS.includes(p.fit)) {
      continue;
    }
    const text = typeof p.text === 'string' ? p.text : null;
    out.push({
      path: p.path,
      uri: typeof p.uri === 'string' ? p.uri : null,
      version: typeof p.version === 'number' ? p.version : null,
      fit: p.fit as Fit,
      text,
      reason: typeof p.reason === 'string' ? p.reason : text === null ? 'the sidecar sent no text for this file' : null,
    });
  }
  return out;
}

/** The proposal for `path`, if any. */
export function proposalFor(proposals: readonly Proposal[], path: string): Proposal | undefined {
  return proposals.find((p) => p.path === path);
}

/**
 * Whether a proposal was computed from the text the editor has now: the open document's version
 * (`openVersion`; undefined when the file is not open, where the disk may have changed: asked again).
 */
export function isCurrent(proposal: Proposal, openVersion: number | undefined): boolean {
  return openVersion !== undefined && proposal.version === openVersion;
}

/** One file change of a tool call (ACP `diff` content), as the agent sent it: shown as it is when no proposal fits. */
export interface FileDiff {
  path: string;
  oldText: string | null;
  newText: string;
}

/** The `diff` blocks of a tool call's content. */
export function toolCallDiffs(content: unknown): FileDiff[] {
  if (!Array.isArray(content)) {
    return [];
  }
  const out: FileDiff[] = [];
  for (const c of content) {
    if (isRecord(c) && c.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string') {
      out.push({ path: c.path, oldText: typeof c.oldText === 'string' ? c.oldText : null, newText: c.newText });
    }
  }
  return out;
}
