// Unit tests of the one-line text helpers (node:test, no VS Code needed).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { chatHeader, escapeIcons, sanitize, sessionPick, statusBarText, statusTooltip, truncate, validChoices, validCommands } from '../src/text';

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

test('status bar text: icon, escaped title, state in words', () => {
  assert.equal(escapeIcons('$(bug) x'), '\\$(bug) x');
  const text = statusBarText({ sessionId: 's', title: '$(bug) 100% \x1b[1mbold', state: 'idle' });
  assert.equal(text, '$(comment-discussion) \\$(bug) 100% bold · idle');
  assert.equal(statusBarText(undefined), '$(comment-discussion) ACP');
  assert.equal(statusBarText({ sessionId: 's', title: null, state: 'waiting_permission' }), '$(question) untitled · waiting for you');
  assert.equal(statusBarText({ sessionId: null, title: null, state: 'idle' }), '$(comment-discussion) no session · idle');
});

test('status tooltip shows mode, model and context use from acp/status', () => {
  const tip = statusTooltip({
    sessionId: 's', title: 'T', state: 'idle', agent: { name: 'demo', title: 'Demo agent', version: '1' },
    mode: 'Code', modeId: 'code', model: 'Demo Fast', modelId: 'demo-fast', usage: { used: 5300, size: 128000 },
  });
  assert.match(tip, /Agent: Demo agent 1/);
  assert.match(tip, /Mode: Code/);
  assert.match(tip, /Model: Demo Fast/);
  assert.match(tip, /Context: 4% of 128000/);
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

test('validCommands keeps well-formed / commands of acp/status, made safe to show', () => {
  assert.deepEqual(validCommands(null), []);
  assert.deepEqual(
    validCommands([{ name: 'edit', description: 'Edit\x1b[2J a file', hint: 'path' }, { name: 'two words' }, { name: '' }, 'x', { name: 'help', description: 'Help', hint: null }]),
    [{ name: 'edit', description: 'Edit a file', hint: 'path' }, { name: 'help', description: 'Help', hint: null }],
  );
});

test('validChoices keeps well-formed modes/models only', () => {
  assert.equal(validChoices(null), undefined);
  assert.deepEqual(validChoices([{ id: 'a', name: 'A' }, { id: '' }, 'x', { name: 'no id' }]), [{ id: 'a', name: 'A' }]);
});

test("the agent's configured name in the tooltip and the chat header (issue 24)", () => {
  const status = {
    sessionId: 's', title: 'Fix auth', state: 'idle',
    agent: { name: 'second-agent', title: 'Second \x1b[1mAgent', version: '2.0', configured: 'codex' },
  };
  assert.match(statusTooltip(status), /^Agent: codex — Second Agent 2\.0$/m);
  assert.equal(chatHeader(status), 'Fix auth · codex · idle');
  // One agent named as configured: said once.
  const demo = { sessionId: null, title: null, state: 'idle', agent: { name: 'demo', title: null, version: '1', configured: 'demo' } };
  assert.match(statusTooltip(demo), /^Agent: demo 1$/m);
  assert.equal(chatHeader(demo), 'no session yet · demo · idle');
  assert.equal(chatHeader({ sessionId: 's', title: null, state: 'running' }), 'untitled session · running');
});

test("session picks name the session's agent", () => {
  const p = sessionPick({
    sessionId: 's1', cwd: '/w', title: 'T', titleSource: 'agent', updatedAt: null, pendingTitle: null, active: false,
    agent: '$(bug)codex',
  });
  assert.equal(p.detail, '\\$(bug)codex · agent');
});
