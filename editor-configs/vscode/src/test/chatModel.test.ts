// The conversation model behind the chat view.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { ChatModel, MAX_ITEMS, MAX_MESSAGE_CHARS, transcriptHistory } from '../chatModel';
import type { SessionUpdateParams } from '../protocol';

function upd(turnId: string, update: Record<string, unknown>, replay = false): SessionUpdateParams {
  return { sessionId: 's1', turnId, replay, update };
}
const text = (t: string) => ({ type: 'text', text: t });

test('chunks of one message join; a tool call in between starts a new message', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  m.update(upd('t1', { sessionUpdate: 'agent_message_chunk', content: text('Hel'), messageId: 'm1' }));
  m.update(upd('t1', { sessionUpdate: 'agent_message_chunk', content: text('lo'), messageId: 'm1' }));
  m.update(upd('t1', { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Read', kind: 'read', status: 'pending' }));
  m.update(upd('t1', { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed' }));
  m.update(upd('t1', { sessionUpdate: 'agent_message_chunk', content: text('More') }));
  m.update(upd('t1', { sessionUpdate: 'agent_message_chunk', content: text(' text') }));
  const items = m.all();
  assert.deepEqual(items.map((i) => i.kind), ['agent', 'tool', 'agent']);
  assert.equal(items[0].kind === 'agent' && items[0].text, 'Hello');
  assert.equal(items[1].kind === 'tool' && items[1].status, 'completed');
  assert.equal(items[2].kind === 'agent' && items[2].text, 'More text');
});

test('a prompt typed here shows once: the agent echo of it is dropped', () => {
  const m = new ChatModel();
  m.localPrompt('Explain X');
  assert.equal(m.running, true);
  m.promptAnswered({ sessionId: 's1', turnId: 't1', position: 0 });
  m.sessionId = 's1';
  m.turn({ sessionId: 's1', turnId: 't1', state: 'running' });
  m.update(upd('t1', { sessionUpdate: 'user_message_chunk', content: text('Explain X') }));
  m.update(upd('t1', { sessionUpdate: 'agent_message_chunk', content: text('Answer') }));
  m.turn({ sessionId: 's1', turnId: 't1', state: 'ended', stopReason: 'end_turn' });
  assert.deepEqual(m.all().map((i) => i.kind), ['user', 'agent']);
  assert.equal(m.running, false);
});

test('a turn the agent ended without sending anything says no answer', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  m.turn({ sessionId: 's1', turnId: 't1', state: 'running' });
  m.turn({ sessionId: 's1', turnId: 't1', state: 'ended', stopReason: 'end_turn', error: null, answered: false });
  m.turn({ sessionId: 's1', turnId: 't2', state: 'running' });
  m.update(upd('t2', { sessionUpdate: 'agent_message_chunk', content: text('Answer') }));
  m.turn({ sessionId: 's1', turnId: 't2', state: 'ended', stopReason: 'end_turn', error: null, answered: true });
  const notes = m.all().filter((i) => i.kind === 'note').map((i) => (i.kind === 'note' ? i.text : ''));
  assert.deepEqual(notes, ['No answer: the agent ended the turn without a reply']);
});

test('a refused prompt says why; a queued one says its position', () => {
  const m = new ChatModel();
  m.localPrompt('a');
  m.promptAnswered(undefined, 'queue full');
  m.localPrompt('b');
  m.promptAnswered({ sessionId: 's', turnId: 't', position: 2 });
  const notes = m.all().filter((i) => i.kind === 'note').map((i) => (i.kind === 'note' ? i.text : ''));
  assert.deepEqual(notes, ['Not sent: queue full', 'Queued (position 2).']);
});

test('updates of another session are ignored', () => {
  const m = new ChatModel();
  m.sessionId = 's2';
  assert.deepEqual(m.update(upd('t1', { sessionUpdate: 'agent_message_chunk', content: text('x') })), []);
  assert.equal(m.all().length, 0);
});

test('replay is the history when no stored transcript is shown, and dropped when it is', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  m.update(upd('', { sessionUpdate: 'user_message_chunk', content: text('old prompt') }, true));
  m.update(upd('', { sessionUpdate: 'agent_message_chunk', content: text('old answer') }, true));
  assert.deepEqual(m.all().map((i) => i.kind), ['user', 'agent']);
  m.reset('s1');
  m.setHistory('## You\n\nold prompt');
  m.update(upd('', { sessionUpdate: 'agent_message_chunk', content: text('old answer') }, true));
  m.update(upd('t9', { sessionUpdate: 'agent_message_chunk', content: text('new answer') }));
  assert.deepEqual(m.all().map((i) => i.kind), ['history', 'agent']);
});

test('the history goes first even when it arrives after live items', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  m.update(upd('t1', { sessionUpdate: 'agent_message_chunk', content: text('live') }));
  m.setHistory('stored');
  assert.deepEqual(m.all().map((i) => i.kind), ['history', 'agent']);
});

test('a permission carries its edit diff (from the request or the tool call) and its answer', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  const diff = { type: 'diff', path: '/w/README.md', oldText: 'a\n', newText: 'a\nb\n' };
  m.update(upd('t1', { sessionUpdate: 'tool_call', toolCallId: 'e1', title: 'Edit README.md', kind: 'edit', status: 'pending', content: [diff] }));
  const options = [
    { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
    { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
  ];
  m.permission({ requestId: 7, sessionId: 's1', turnId: 't1', toolCall: { toolCallId: 'e1' }, options, state: 'pending', outcome: null });
  const pending = m.pendingPermissions();
  assert.equal(pending.length, 1);
  assert.equal(pending[0].title, 'Edit README.md');
  assert.deepEqual(pending[0].diffs, [{ path: '/w/README.md', oldText: 'a\n', newText: 'a\nb\n' }]);
  m.permission({ requestId: 7, sessionId: 's1', options, state: 'resolved', outcome: { outcome: 'selected', optionId: 'allow-once' } });
  assert.equal(m.pendingPermissions().length, 0);
  const item = m.get('permission-7');
  assert.equal(item?.kind === 'permission' && item.answer, 'Allow once');
});

test('turn ends other than end_turn are shown; errors too', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  m.turn({ sessionId: 's1', turnId: 'a', state: 'running' });
  assert.equal(m.running, true);
  m.turn({ sessionId: 's1', turnId: 'a', state: 'ended', stopReason: 'cancelled' });
  m.turn({ sessionId: 's1', turnId: 'b', state: 'ended', error: { message: 'demo failure' } });
  const notes = m.all().map((i) => (i.kind === 'note' ? i.text : ''));
  assert.deepEqual(notes, ['The turn ended: cancelled', 'The turn failed: demo failure']);
  assert.equal(m.running, false);
});

test('plans replace themselves within a turn', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  m.update(upd('t1', { sessionUpdate: 'plan', entries: [{ content: 'a', status: 'pending' }] }));
  m.update(upd('t1', { sessionUpdate: 'plan', entries: [{ content: 'a', status: 'completed' }] }));
  const plans = m.all().filter((i) => i.kind === 'plan');
  assert.equal(plans.length, 1);
  assert.equal(plans[0].kind === 'plan' && plans[0].entries[0].status, 'completed');
});

test('the conversation is bounded', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  for (let i = 0; i < MAX_ITEMS + 50; i++) {
    m.update(upd('t', { sessionUpdate: 'tool_call', toolCallId: `c${i}`, title: 't', status: 'completed' }));
  }
  assert.equal(m.all().length, MAX_ITEMS);
});

test('a flood of chunks keeps the end of the message, within the bound', () => {
  const m = new ChatModel();
  m.sessionId = 's1';
  const chunk = 'x'.repeat(999) + '\n';
  for (let i = 0; i < 500; i++) {
    m.update(upd('t', { sessionUpdate: 'agent_message_chunk', content: text(i === 499 ? 'THE END' : chunk) }));
  }
  const items = m.all();
  assert.equal(items.length, 1);
  const body = items[0].kind === 'agent' ? items[0].text : '';
  assert.ok(body.length <= MAX_MESSAGE_CHARS, String(body.length));
  assert.ok(body.startsWith('…') && body.endsWith('THE END'));
});

test('transcriptHistory cuts the prompt area at the last marker and drops the marker comments', () => {
  const doc =
    '# Session\n<!-- acp-sidecar transcript · agent demo · session s1 -->\n\nhello\n\n---\n\n## Your prompt\n\n' +
    '<!-- acp-sidecar: write your prompt below -->\ndraft';
  assert.equal(transcriptHistory(doc), '# Session\n\nhello');
  assert.equal(transcriptHistory('no area'), 'no area');
  // Only the sidecar's own markers go: agent text in the document was escaped by the sidecar.
  assert.equal(transcriptHistory('a\n<!-- other -->\nb'), 'a\n<!-- other -->\nb');
});
