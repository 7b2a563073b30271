// The chat view's HTML: nothing the agent writes becomes markup or loads anything.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { diffStats, escapeHtml, renderItem, renderMarkdown } from '../render';

test('raw HTML from the agent is shown as text, never as markup', () => {
  const html = renderMarkdown('hi <script>alert(1)</script> <img src=x onerror=alert(2)> <b>bold</b>\n\n<iframe src="https://x"></iframe>');
  assert.doesNotMatch(html, /<script|<img|<iframe|<b>/);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(html, /&lt;img src=x onerror=alert\(2\)&gt;/);
});

test('javascript: links are not links; images are not loaded', () => {
  const html = renderMarkdown('[click](javascript:alert(1)) ![pic](https://example.com/x.png) [ok](https://example.com)');
  assert.doesNotMatch(html, /href="javascript/);
  assert.doesNotMatch(html, /<img/);
  assert.match(html, /<a href="https:\/\/example.com">ok<\/a>/);
});

test('Markdown is rendered (code, lists, emphasis)', () => {
  const html = renderMarkdown('**Done**\n\n- one\n- two\n\n```py\nx = 1 < 2\n```');
  assert.match(html, /<strong>Done<\/strong>/);
  assert.match(html, /<li>one<\/li>/);
  assert.match(html, /<code class="language-py">x = 1 &lt; 2\n<\/code>/);
});

test('user text, tool titles, ids and option names are escaped, attributes too', () => {
  const user = renderItem({ id: 'u', kind: 'user', text: '<b>me</b>' });
  assert.match(user, /&lt;b&gt;me&lt;\/b&gt;/);
  const perm = renderItem({
    id: 'permission-"x', kind: 'permission', requestId: '"><img src=x>', title: '<i>rm -rf</i>', toolCallId: 't',
    options: [{ optionId: 'a"b', name: '<u>Allow</u>', kind: 'allow_once' }], pending: true, answer: undefined,
    diffs: [{ path: '/w/<x>.txt', oldText: 'a\n', newText: 'a\nb\n' }],
  });
  assert.doesNotMatch(perm, /<img|<i>|<u>/);
  assert.match(perm, /data-request="&quot;&gt;&lt;img src=x&gt;"/);
  assert.match(perm, /data-option="a&quot;b"/);
  assert.match(perm, /Review diff/);
  assert.equal(escapeHtml(`<>&"'`), '&lt;&gt;&amp;&quot;&#39;');
});

test('a resolved permission shows the answer and no buttons', () => {
  const html = renderItem({
    id: 'p', kind: 'permission', requestId: '1', title: 'Edit', toolCallId: undefined,
    options: [{ optionId: 'a', name: 'Allow', kind: 'allow_once' }], pending: false, answer: 'Allow', diffs: [],
  });
  assert.match(html, /Answered: Allow/);
  assert.doesNotMatch(html, /<button/);
});

test('diffStats counts the changed lines', () => {
  assert.deepEqual(diffStats({ path: 'f', oldText: 'a\nb\nc\n', newText: 'a\nB\nc\nd\n' }), { added: 2, removed: 1 });
  assert.deepEqual(diffStats({ path: 'f', oldText: null, newText: 'x\n' }), { added: 1, removed: 0 });
  assert.deepEqual(diffStats({ path: 'f', oldText: 'same', newText: 'same' }), { added: 0, removed: 0 });
});
