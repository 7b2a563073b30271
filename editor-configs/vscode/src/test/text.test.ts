// Unit tests of the one-line text helpers (node:test, no VS Code needed).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { escapeIcons, offeredIds, sanitize, sessionPick, statusBarText, statusTooltip, truncate, validChoices } from '../text';

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

test('offeredIds reads modes and config options (sidecars without modes/models)', () => {
  assert.deepEqual(offeredIds('code'), ['code']);
  assert.deepEqual(offeredIds({ currentModeId: 'ask', availableModes: [{ id: 'ask' }, { id: 'code' }] }), ['ask', 'code']);
  assert.deepEqual(
    offeredIds({ id: 'model', currentValue: 'm1', options: [{ value: 'm1' }, { group: 'g', options: [{ value: 'm2' }] }] }),
    ['m1', 'm2'],
  );
});

test('validChoices keeps well-formed modes/models only', () => {
  assert.equal(validChoices(null), undefined);
  assert.deepEqual(validChoices([{ id: 'a', name: 'A' }, { id: '' }, 'x', { name: 'no id' }]), [{ id: 'a', name: 'A' }]);
});
