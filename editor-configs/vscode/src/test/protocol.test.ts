// Unit tests of the extension's pure logic (node:test, no VS Code needed).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import {
  TranscriptFormatter,
  escapeIcons,
  initializationOptions,
  offeredIds,
  sanitize,
  sessionPick,
  statusBarText,
  truncate,
} from '../protocol';

test('sanitize removes escape sequences and control characters', () => {
  assert.equal(sanitize('100% \x1b[31mred\x1b[0m'), '100% red');
  assert.equal(sanitize('a\nb\tc\x07d\u202eе'), 'a b cdе');
  assert.equal(sanitize(null), '');
  assert.equal(sanitize('\x1b]0;title\x07x'), 'x');
});

test('truncate never splits a surrogate pair', () => {
  assert.equal(truncate('😀😀😀', 2), '😀…');
  assert.equal(truncate('abc', 5), 'abc');
});

test('status bar text escapes icons in titles', () => {
  assert.equal(escapeIcons('$(bug) x'), '\\$(bug) x');
  const text = statusBarText({ sessionId: 's', title: '$(bug) 100% \x1b[1mbold', state: 'idle' });
  assert.equal(text, '$(comment-discussion) \\$(bug) 100% bold · idle');
  assert.equal(statusBarText(undefined), '$(comment-discussion) ACP');
});

test('initializationOptions maps settings to the contract keys', () => {
  const base = {
    agentCommand: [] as string[],
    agentEnv: {} as Record<string, string>,
    permissions: 'ask',
    renameTimeoutMs: 120000,
    renameFallback: 'keep_local',
    titlesMaxLength: 500,
  };
  assert.deepEqual(initializationOptions(base), {
    permissions: 'ask',
    rename: { timeoutMs: 120000, fallback: 'keep_local' },
    titles: { maxLength: 500 },
  });
  const withAgent = initializationOptions({ ...base, agentCommand: ['codex-acp'], agentEnv: { K: 'V' } });
  assert.deepEqual(withAgent.agent, { command: ['codex-acp'], env: { K: 'V' } });
});

test('session picks show title, cwd and source', () => {
  const p = sessionPick({
    sessionId: 's1', cwd: '/w', title: 'Fix \x1b[2Jauth', titleSource: 'user',
    updatedAt: '2025-01-01T00:00:00Z', pendingTitle: null, active: true,
  });
  assert.equal(p.label, '$(circle-filled) Fix auth');
  assert.equal(p.description, '/w');
  assert.equal(p.detail, 'user · 2025-01-01T00:00:00Z');
});

test('offeredIds reads modes and config options', () => {
  assert.deepEqual(offeredIds('code'), ['code']);
  assert.deepEqual(
    offeredIds({ currentModeId: 'ask', availableModes: [{ id: 'ask' }, { id: 'code' }] }),
    ['ask', 'code'],
  );
  assert.deepEqual(
    offeredIds({ id: 'model', currentValue: 'm1', options: [{ value: 'm1' }, { group: 'g', options: [{ value: 'm2' }] }] }),
    ['m1', 'm2'],
  );
});

test('transcript formatter concatenates chunks and echoes the prompt once', () => {
  const f = new TranscriptFormatter();
  let out = '';
  f.promptSent();
  out += f.promptAnswered('Explain X', { sessionId: 's', turnId: 't1', position: 0 });
  out += f.turn({ sessionId: 's', turnId: 't1', state: 'running' });
  const upd = (u: Record<string, unknown>) =>
    f.update({ sessionId: 's', turnId: 't1', replay: false, update: u });
  out += upd({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'Explain X' } });
  out += upd({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Hel' } });
  out += upd({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'lo' } });
  out += upd({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Read', kind: 'read', status: 'pending' });
  out += upd({ sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'pending' });
  out += upd({ sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed' });
  out += upd({ sessionUpdate: 'plan', entries: [{ content: 'a', status: 'completed' }, { content: 'b', status: 'pending' }] });
  out += f.turn({ sessionId: 's', turnId: 't1', state: 'ended', stopReason: 'cancelled' });
  assert.equal(
    out,
    '### You\n\nExplain X\n\n### Agent\n\nHello\n\n- [read] Read (pending)\n- [read] Read (completed)\n' +
      '\n**Plan**\n- [x] a\n- [ ] b\n\n_turn ended: cancelled_\n\n',
  );
});
