// Unit tests of the diff rule (the same cases as sidecar/core/diff_apply.py's; a Python test
// compares the two on many more, tests/editors/vscode/test_diff_apply.py).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { applyDiff, applyDiffs } from '../diffApply';

const README = '# Demo\n\nline one\nline two\n';

test('a whole-file diff gives its new text; a new file too', () => {
  assert.deepEqual(applyDiffs(README, [{ oldText: README, newText: README + 'added\n' }]), { fit: 'applies', text: README + 'added\n' });
  assert.deepEqual(applyDiffs(null, [{ oldText: null, newText: 'new file\n' }]), { fit: 'applies', text: 'new file\n' });
});

test('a snippet changes its part of the file only', () => {
  assert.deepEqual(applyDiffs(README, [{ oldText: 'line two', newText: 'line 2' }]), { fit: 'applies', text: '# Demo\n\nline one\nline 2\n' });
  assert.deepEqual(applyDiffs(README, [{ oldText: 'line one\n', newText: '' }]), { fit: 'applies', text: '# Demo\n\nline two\n' });
  assert.equal(applyDiff('a $& b', 'b', '$1 $&').text, 'a $& $1 $&');
});

test('a file that already holds the edit is left as it is', () => {
  assert.deepEqual(applyDiffs('a\nb\nc\n', [{ oldText: 'b\n', newText: 'b\nc\n' }]), { fit: 'applied', text: 'a\nb\nc\n' });
  assert.deepEqual(applyDiffs(README, []), { fit: 'applied', text: README });
});

test('old text missing, found twice, or of a missing file: a conflict', () => {
  assert.equal(applyDiffs(README, [{ oldText: 'not there', newText: 'x' }]).fit, 'conflict');
  assert.equal(applyDiffs('x\nx\n', [{ oldText: 'x', newText: 'y' }]).fit, 'conflict');
  assert.equal(applyDiffs(null, [{ oldText: 'old', newText: 'new' }]).fit, 'conflict');
  assert.equal(applyDiffs(README, [{ oldText: 'x', newText: 3 }]).fit, 'conflict');
  assert.deepEqual(applyDiffs('', [{ oldText: '', newText: 'new' }]), { fit: 'applies', text: 'new' });
});

test('several diffs of one file apply in order, each to what the last made', () => {
  const diffs = [
    { oldText: 'line one', newText: 'line 1' },
    { oldText: 'line 1\nline two', newText: '1\n2' },
  ];
  assert.deepEqual(applyDiffs(README, diffs), { fit: 'applies', text: '# Demo\n\n1\n2\n' });
});
