// Unit tests of the chat's conversation: the conversation document cut into turns and rendered.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { type Part } from '../src/conversation';
import { InspectedConversation, conversationOf, splitTurns } from './wholeDocument';

const html = (part: Part): string => part.blocks.join('');

const HEAD = '# Explain README.md\n<!-- acp-sidecar transcript · agent acp-sidecar-demo · session s1 -->\n\n';
const AREA = '---\n\n## Your prompt\n\n<!-- acp-sidecar: write your prompt below this line, then run the code action "Send to agent" -->\n';
const YOU = '## You\n\n    Explain README.md\n\n';
const AGENT = '## Agent\n\n> **Warning:** Disk almost full — Free some space\n\n**Tool:** Read README.md (read · completed)\n\nIt has 4 lines.\n\n';

test('the conversation is the document without its header, prompt area and marker comments', () => {
  const body = conversationOf(HEAD + YOU + AGENT + AREA + 'an unsent prompt\n');
  assert.equal(body, YOU + AGENT);
  assert.ok(!body.includes('acp-sidecar'));
});

test('turns are cut at the sidecar headings only, never inside a code block', () => {
  const fenced = '## Agent\n\n```\n\n## You\n```\n\nafter\n\n';
  assert.deepEqual(splitTurns(YOU + fenced + YOU), [YOU, fenced, YOU]);
  // A heading-like line inside an indented prompt, or without a blank line before it, is no cut.
  const prompt = '## You\n\n    ## Agent\n\ntext\n## Agent\n';
  assert.deepEqual(splitTurns(prompt), [prompt]);
  assert.deepEqual(splitTurns(''), ['']);
});

test('a streamed answer renders its own turn again, nothing before it', () => {
  const view = new InspectedConversation();
  const first = view.update(HEAD + YOU + '## Agent\n\nIt has\n\n' + AREA);
  assert.equal(first.count, 2);
  assert.deepEqual(first.changed.map((p) => [p.index, p.kind]), [[0, 'you'], [1, 'agent']]);
  const next = view.update(HEAD + YOU + AGENT + AREA);
  assert.deepEqual(next.changed.map((p) => p.index), [1]);
  assert.match(html(next.changed[0]), /<blockquote>\s*<p><strong>Warning:<\/strong> Disk almost full — Free some space<\/p>/);
  assert.match(html(next.changed[0]), /<strong>Tool:<\/strong> Read README.md \(read · completed\)/);
  assert.equal(view.all().length, 2);
});

test('HTML and images from the agent are text, never elements', () => {
  const view = new InspectedConversation();
  const { changed } = view.update(HEAD + '## Agent\n\nSee <b>bold</b> <img src=x onerror=alert(1)> ![i](http://x/y.png) [a](javascript:alert(1))\n\n' + AREA);
  const html = changed[0].blocks.join('');
  assert.ok(html.includes('&lt;b&gt;bold&lt;/b&gt;') && html.includes('&lt;img src=x'), html);
  assert.ok(!/<img|<b>|href="javascript/.test(html), html);
});

test('a diff block has its lines marked; a plan its boxes', () => {
  const view = new InspectedConversation();
  const diff = '## Agent\n\nDiff of `a.txt`:\n\n```diff\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+<b>\n```\n\n**Plan:**\n\n- [x] Read\n- [ ] Write\n\n';
  const html = view.update(HEAD + diff + AREA).changed[0].blocks.join('');
  assert.ok(html.includes('<span class="file">--- a/a.txt</span>') && html.includes('<span class="hunk">@@ -1 +1,2 @@</span>'), html);
  assert.ok(html.includes(' a\n<span class="add">+&lt;b&gt;</span>'), html);
  assert.ok(html.includes('<li class="task done">☑ Read</li>') && html.includes('<li class="task">☐ Write</li>'), html);
});
