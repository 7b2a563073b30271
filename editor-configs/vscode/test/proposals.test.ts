// Unit tests of reading the sidecar's edit proposals (the rule itself is the sidecar's alone,
// tests/unit/test_proposals.py).
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { isCurrent, proposalFor, toProposals } from '../src/proposals';

const good = { path: '/ws/a.txt', uri: 'file:///ws/a.txt', version: 3, fit: 'applies', text: 'after\n', reason: null };

test('proposals of the protocol shape are taken as they are', () => {
  const conflict = { ...good, path: '/ws/b.txt', fit: 'conflict', text: null, reason: "the agent's old text is not in the file" };
  assert.deepEqual(toProposals([good, conflict]), [good, conflict]);
});

test('what is not a proposal is left out; a missing text says so', () => {
  assert.deepEqual(toProposals(null), []);
  assert.deepEqual(toProposals({ 0: good }), []);
  assert.deepEqual(toProposals([1, { ...good, path: 7 }, { ...good, fit: 'whole' }, { ...good, fit: undefined }]), []);
  const [p] = toProposals([{ path: '/ws/a.txt', fit: 'applies', text: 5 }]);
  assert.deepEqual(p, { path: '/ws/a.txt', uri: null, version: null, fit: 'applies', text: null, reason: 'the sidecar sent no text for this file' });
});

test('a proposal is current only for the open document version it was computed from', () => {
  const [p] = toProposals([good]);
  assert.equal(isCurrent(p, 3), true);
  assert.equal(isCurrent(p, 4), false); // typed since
  assert.equal(isCurrent(p, undefined), false); // not open: the disk may have changed
  assert.equal(isCurrent({ ...p, version: null }, 1), false); // computed from the disk, open since
  assert.equal(proposalFor([p], '/ws/a.txt'), p);
  assert.equal(proposalFor([p], '/ws/other.txt'), undefined);
});
