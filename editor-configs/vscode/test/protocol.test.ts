// Unit tests of the settings → initializationOptions mapping.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { featuresUnknownTo, initializationOptions, refusedNewerOptions } from '../src/protocol';

const base = {
  agentCommand: [] as string[],
  agentEnv: {} as Record<string, string>,
  permissions: 'ask',
  renameTimeoutMs: 120000,
  renameFallback: 'keep_local',
  titlesMaxLength: 500,
};

test('initializationOptions maps settings to the protocol keys and hands the conversation document and permissions to the extension', () => {
  assert.deepEqual(initializationOptions(base), {
    permissions: 'ask',
    rename: { timeoutMs: 120000, fallback: 'keep_local' },
    titles: { maxLength: 500 },
    notify: { permissionDialog: false, elicitationDialog: false, replayUpdates: false },
    transcript: { showOnPrompt: false },
  });
  const withAgent = initializationOptions({ ...base, agentCommand: ['codex-acp'], agentEnv: { K: 'V' } });
  assert.deepEqual(withAgent.agent, { command: ['codex-acp'], env: { K: 'V' } });
});

test('acpSidecar.agents and defaultAgent go to initializationOptions as they are; empty ones are left out', () => {
  const agents = { claude: { command: ['claude-agent-acp'] }, codex: { command: ['codex-acp'], env: { K: 'V' } } };
  const init = initializationOptions({ ...base, agents, defaultAgent: 'claude' });
  assert.deepEqual([init.agents, init.defaultAgent], [agents, 'claude']);
  const none = initializationOptions({ ...base, agents: {}, defaultAgent: '' });
  assert.deepEqual(['agents' in none, 'defaultAgent' in none], [false, false]);
});

test('acpSidecar.changes.severity and follow go to initializationOptions.changes', () => {
  const init = initializationOptions({ ...base, changesSeverity: 'information', changesFollow: true });
  assert.deepEqual(init.changes, { severity: 'information', follow: true });
  assert.deepEqual(initializationOptions({ ...base, changesSeverity: 'hint' }).changes, { severity: 'hint' });
  assert.equal('changes' in initializationOptions(base), false);
});

test('titles.maxLength stays within what the sidecar accepts (8 to 10 000)', () => {
  assert.deepEqual(initializationOptions({ ...base, titlesMaxLength: 1 }).titles, { maxLength: 8 });
  assert.deepEqual(initializationOptions({ ...base, titlesMaxLength: 123456 }).titles, { maxLength: 10000 });
});

test('an older sidecar refusing the new options is recognised, other errors are not', () => {
  const f = refusedNewerOptions;
  assert.deepEqual(f("acp-sidecar: initializationOptions.notify: unknown key 'permissionDialog' ignored"), ['permissionDialog']);
  assert.deepEqual(f("acp-sidecar: initializationOptions: unknown key 'transcript' ignored"), ['transcript']);
  assert.deepEqual(f("acp-sidecar: initializationOptions.notify: unknown key 'elicitationDialog' ignored"), ['elicitationDialog']);
  assert.deepEqual(
    f('acp-sidecar: initializationOptions: 2 bad keys, the default used for each: notify.permissionDialog (unknown key, ignored); transcript (unknown key, ignored)'),
    ['permissionDialog', 'transcript'],
  );
  assert.deepEqual(f('acp-sidecar: initializationOptions: 1 bad key, the default used for each: transcript.showOnPrompt (unknown key, ignored)'), ['transcript']);
  // Anything else is the user's to see.
  assert.equal(f("acp-sidecar: initializationOptions: unknown key 'permissionDialog' ignored"), undefined);
  assert.equal(f("acp-sidecar: initializationOptions: unknown key 'bogus' ignored"), undefined);
  assert.equal(
    f('acp-sidecar: initializationOptions: 2 bad keys, the default used for each: transcript (unknown key, ignored); titles.maxLength (expected 8 to 10000, got 3)'),
    undefined,
  );
  assert.equal(f('acp-sidecar: titles.maxLength must be 8..10000'), undefined);
});

test("the sidecar's version in its initialize answer (serverInfo) says which of the new options it knows", () => {
  const all = ['permissionDialog', 'elicitationDialog', 'replayUpdates', 'transcript'];
  // What pygls sends for acp-sidecar: its name and sidecar.__version__.
  assert.deepEqual(featuresUnknownTo({ name: 'acp-sidecar', version: '0.1.0' }), []);
  assert.deepEqual(featuresUnknownTo({ name: 'acp-sidecar', version: '0.1' }), []);
  assert.deepEqual(featuresUnknownTo({ name: 'acp-sidecar', version: '0.2.0.dev3' }), []);
  assert.deepEqual(featuresUnknownTo({ name: 'acp-sidecar', version: '1.0.0-rc.1' }), []);
  // Older than the first version that has them, or no acp-sidecar version at all: none is known.
  assert.deepEqual(featuresUnknownTo({ name: 'acp-sidecar', version: '0.0.9' }), all);
  assert.deepEqual(featuresUnknownTo({ name: 'acp-sidecar', version: 'unknown' }), all);
  assert.deepEqual(featuresUnknownTo({ name: 'acp-sidecar' }), all);
  assert.deepEqual(featuresUnknownTo({ name: 'some-other-server', version: '9.0.0' }), all);
  assert.deepEqual(featuresUnknownTo(undefined), all);
});
