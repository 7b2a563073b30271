// What a file becomes when an agent's diffs are applied to its current text:
// the same rule as the sidecar's (sidecar/core/diff_apply.py) and the Neovim
// plugin's. Agents send a diff as the whole file before and after (`oldText`
// null for a new file) or as only the part that changes (claude-agent-acp's
// Edit); showing `newText` as "the file after the edit" is right only for the
// first, so the review asks here. Kept free of `vscode` for the unit tests.

export type Fit = 'applies' | 'applied' | 'conflict';

export interface Proposal {
  /** applies: `text` is the file after the edit; applied: the file already holds it; conflict: it does not fit. */
  fit: Fit;
  /** The whole file after the edit; null on a conflict. */
  text: string | null;
}

export interface DiffTexts {
  oldText?: unknown;
  newText?: unknown;
}

/** Occurrences of `part` (not empty) in `text`, not overlapping (Python's str.count). */
function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

/** `current`: the file's text (null: no such file); `old`/`next`: the diff's texts. */
export function applyDiff(current: string | null, old: string | null, next: string): Proposal {
  if (current === next) {
    return { fit: 'applied', text: current };
  }
  if (old === null) {
    return { fit: 'applies', text: next }; // a new file, or the whole file rewritten
  }
  if (current === null || old === '') {
    // Old text of a file that is not there; an empty old text fits only an empty file.
    const fits = old === '' && !current;
    return fits ? { fit: 'applies', text: next } : { fit: 'conflict', text: null };
  }
  const olds = count(current, old);
  if (next !== '' && next.includes(old) && current.includes(next)) {
    return { fit: 'applied', text: current }; // e.g. lines appended after `old`: already there
  }
  if (olds === 1) {
    const at = current.indexOf(old); // not String.replace: `$` in the new text is no pattern
    return { fit: 'applies', text: current.slice(0, at) + next + current.slice(at + old.length) };
  }
  if (olds === 0 && next !== '' && current.includes(next)) {
    return { fit: 'applied', text: current };
  }
  return { fit: 'conflict', text: null };
}

/** Several diffs of one file, in order (one per hunk), each applied to what the last made. */
export function applyDiffs(current: string | null, diffs: readonly DiffTexts[]): Proposal {
  let text = current;
  const fits: Fit[] = [];
  for (const diff of diffs) {
    const old = diff.oldText ?? null;
    const next = diff.newText;
    if (typeof next !== 'string' || !(old === null || typeof old === 'string')) {
      return { fit: 'conflict', text: null };
    }
    const step = applyDiff(text, old, next);
    if (step.text === null) {
      return step;
    }
    text = step.text;
    fits.push(step.fit);
  }
  if (fits.every((f) => f === 'applied')) {
    return { fit: 'applied', text: current };
  }
  return { fit: 'applies', text };
}
