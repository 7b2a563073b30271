// Unit tests of what the chat shows below the conversation: prompts not shown yet, permission
// requests, edits to review.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { LiveArea } from '../src/live';

const DIFF = { type: 'diff', path: '/ws/README.md', oldText: 'a\n', newText: 'a\nb\n' };
const OPTIONS = [
  { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
  { optionId: 'reject', name: 'Reject <now>', kind: 'reject_once' },
];

test('a prompt shows until its turn started; a refused one becomes a note', () => {
  const live = new LiveArea();
  const p = live.sent('Explain <b>x</b>');
  assert.match(live.html(), /Explain &lt;b&gt;x&lt;\/b&gt;/);
  live.answered(p, '7', 1);
  assert.match(live.html(), /Queued \(position 1\)/);
  assert.equal(live.shown(new Set(['6'])), false);
  assert.equal(live.shown(new Set(['7'])), true);
  assert.equal(live.html(), '');
  live.answered(live.sent('again'), undefined, 0, 'no agent');
  assert.match(live.html(), /class="note error">Not sent: no agent/);
});

test('a live tool call with diffs can be reviewed; inside its permission card once one asks', () => {
  const live = new LiveArea();
  assert.equal(live.update({ sessionId: 's', update: { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Edit README.md', content: [DIFF] } }), false);
  assert.equal(live.update({ sessionId: 's', update: { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Edit README.md', content: [DIFF] }, proposals: [] }), true);
  assert.match(live.html(), /<div class="tool"><span class="title">Edit README.md<\/span>.*data-card="edit:t1"/);
  live.permission({ requestId: 9, sessionId: 's', toolCall: { toolCallId: 't1' }, options: OPTIONS, state: 'pending' });
  const html = live.html();
  assert.ok(!html.includes('edit:t1'), html);
  assert.match(html, /class="permission pending">.*Edit README.md.*data-card="permission:9".*Reject &lt;now&gt;/);
  live.permission({ requestId: 9, sessionId: 's', options: [], state: 'resolved', outcome: { outcome: 'selected', optionId: 'allow' } });
  assert.match(live.html(), /class="permission resolved">.*Answered: Allow/);
  assert.deepEqual(live.diffsOf('t1'), [{ path: '/ws/README.md', oldText: 'a\n', newText: 'a\nb\n' }]);
  // The next prompt: the last turn's answered cards and edits go.
  live.sent('next');
  assert.ok(!live.html().includes('permission'), live.html());
});
