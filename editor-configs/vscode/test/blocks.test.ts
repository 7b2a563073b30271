// Unit tests of the incremental conversation: a document that grows as the sidecar writes it
// (appended above the prompt area, a provisional fence closing a code block still streaming, a
// line still being written) shows, at every step, exactly what rendering it whole shows.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { type Part, RenderedConversation, renderMarkdown } from '../src/conversation';
import { ConversationFileReader } from '../src/conversationFile';
import { InspectedConversation, conversationOf, splitTurns } from './wholeDocument';

const HEAD = '# A long answer\n<!-- acp-sidecar transcript · agent demo · session s1 -->\n\n';
const AREA = '---\n\n## Your prompt\n\n<!-- acp-sidecar: write your prompt below this line, then run the code action "Send to agent" -->\n';
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fence a body ends inside of (what the sidecar closes provisionally), or ''. */
function openFence(body: string): string {
  let fence: string | undefined;
  for (const line of body.split('\n')) {
    const m = FENCE.exec(line);
    if (fence !== undefined) {
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length && m[2].trim() === '') {
        fence = undefined;
      }
    } else if (m && !(m[1][0] === '`' && m[2].includes('`'))) {
      fence = m[1];
    }
  }
  return fence ?? '';
}

/** sidecar/features/conversation/document.py separator_for. */
function separator(body: string, closing: string): string {
  if (closing) {
    return (!body || body.endsWith('\n') ? '' : '\n') + closing + '\n\n';
  }
  if (!body || body.endsWith('\n\n')) {
    return '';
  }
  return body.endsWith('\n') ? '\n' : '\n\n';
}

function documentOf(body: string, prompt = ''): string {
  return HEAD + body + separator(body, openFence(body)) + AREA + prompt;
}

/** The webview's turns as blocks, changed as chat.ts changes them. */
function apply(view: string[][], count: number, parts: Part[]): void {
  view.length = Math.min(view.length, count);
  for (const part of parts) {
    while (view.length <= part.index) {
      view.push([]);
    }
    view[part.index].length = part.from;
    view[part.index].push(...part.blocks);
  }
}

const LINE = (i: number): string => `line ${i} of the answer, with *emphasis* and \`code\`.\n`;

/** A conversation with what the sidecar writes: turns, paragraphs, lists, code blocks with blank lines. */
function conversation(): string {
  let agent = '## Agent\n\n**Plan:**\n\n- [x] Read\n- [ ] Write\n\n';
  for (let p = 0; p < 30; p++) {
    if (p % 5 === 4) {
      agent += '```python\n' + LINE(p) + '\n\n## You\n\n' + LINE(p + 1) + '```\n\n';
    } else if (p % 7 === 3) {
      agent += `- item ${p}\n\n- item ${p} b\n\n  continued\n\n1. one\n2) two\n\n`;
    } else if (p % 11 === 5) {
      agent += '~~~~\n```\nnot a close\n\n~~~~\n\n> quoted\n\n> again\n\n';
    } else {
      agent += LINE(p) + LINE(p + 100) + '\n';
    }
  }
  return '## You\n\n    Explain it #answer\n\n' + agent + '## You\n\n    more\n\n## Agent\n\nEND OF ANSWER';
}

function wholeHtml(document: string): string[] {
  return splitTurns(conversationOf(document)).map((turn) => renderMarkdown(turn));
}

test('the blocks of each turn add up to the turn, and render to what the turn renders whole', () => {
  const body = conversation();
  const doc = documentOf(body);
  const view = new InspectedConversation();
  const { count, changed } = view.update(doc);
  assert.deepEqual(view.turnsMarkdown(), splitTurns(conversationOf(doc)));
  assert.equal(count, 4);
  assert.deepEqual(changed.map((p) => p.blocks.join('')), wholeHtml(doc));
  // A code block with blank lines (and a heading-like line) inside is one block.
  const code = changed[1].blocks.filter((b) => b.startsWith('<pre>') && b.includes('## You'));
  assert.equal(code.length, 6);
  assert.ok(code.every((b) => b.includes('\n\n## You\n\n')), code[0]);
  assert.ok(changed[1].blocks.length > 30, String(changed[1].blocks.length));
});

test('a document that grows piece by piece shows at every step what it shows whole', () => {
  const body = conversation();
  // Deterministic cut points of every size: mid-line, mid-fence, at blank lines.
  let seed = 7;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const reader = new InspectedConversation();
  const shown: string[][] = [];
  let committed = 0; // characters of the document the conversation committed to
  let length = 0;
  let steps = 0;
  let lateFrom = 0;
  while (length < body.length) {
    length = Math.min(body.length, length + 1 + random(steps % 3 === 0 ? 300 : 40));
    const doc = documentOf(body.slice(0, length), steps % 4 === 0 ? 'an unsent prompt\n' : '');
    committed += reader.feed(doc.slice(committed), steps === 0);
    assert.ok(doc.slice(0, committed) === documentOf(body).slice(0, committed) || committed <= HEAD.length + 1);
    const { count, changed } = reader.changes();
    apply(shown, count, changed);
    assert.deepEqual(reader.turnsMarkdown(), splitTurns(conversationOf(doc)), `step ${steps}, length ${length}`);
    assert.deepEqual(shown.map((blocks) => blocks.join('')), wholeHtml(doc), `step ${steps}, length ${length}`);
    for (const part of changed) {
      lateFrom = Math.max(lateFrom, part.from);
    }
    steps += 1;
  }
  assert.ok(steps > 50, String(steps));
  assert.ok(lateFrom > 20, 'a change late in a turn sends only its last blocks');
  // What was committed is final: the committed text is a prefix of every later document.
  assert.ok(committed > body.length / 2, `${committed} of ${body.length}`);
});

test('a change sends only the blocks that changed, and a webview back from hiding gets all', () => {
  const view = new RenderedConversation();
  const doc = (n: number): string => {
    let body = '## You\n\n    go\n\n## Agent\n\n';
    for (let i = 0; i < n; i++) {
      body += LINE(i) + '\n';
    }
    return documentOf(body + 'partial li');
  };
  let committed = 0;
  committed += view.feed(doc(40), true);
  view.changes();
  committed += view.feed(doc(41).slice(committed), false);
  const { changed } = view.changes();
  assert.equal(changed.length, 1);
  assert.equal(changed[0].index, 1);
  assert.ok(changed[0].from >= 39, String(changed[0].from));
  assert.ok(changed[0].blocks.length <= 3, String(changed[0].blocks.length));
  const all = view.all();
  assert.deepEqual(all.map((p) => p.blocks.join('')), wholeHtml(doc(41)));
});

test('the conversation file is read from the commit point on while it is the same file', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-conversation-'));
  const file = path.join(dir, 'doc.md');
  try {
    const reader = new ConversationFileReader(file);
    const view = new RenderedConversation();
    const shown: string[][] = [];
    let body = '## You\n\n    hello ✓\n\n## Agent\n\n';
    const writeInPlace = (): void => {
      // Like the sidecar's append: the same file, cut and written again from where it changed.
      const fd = fs.openSync(file, 'r+');
      const data = Buffer.from(documentOf(body), 'utf8');
      fs.ftruncateSync(fd, 0);
      fs.writeSync(fd, data, 0, data.length, 0);
      fs.closeSync(fd);
    };
    fs.writeFileSync(file, documentOf(body));
    const resets: boolean[] = [];
    let committed = 0;
    const step = async (): Promise<void> => {
      const piece = await reader.read();
      resets.push(piece.reset);
      const consumed = view.feed(piece.text, piece.reset);
      committed = (piece.reset ? 0 : committed) + consumed;
      reader.committed(piece.text, consumed);
      const { count, changed } = view.changes();
      apply(shown, count, changed);
      assert.deepEqual(shown.map((b) => b.join('')), wholeHtml(documentOf(body)));
    };
    await step();
    for (let i = 0; i < 20; i++) {
      body += `paragraph ${i} — ünïcode ✓ ` + (i % 3 === 0 ? '```\ncode\n\n' : '\n\n');
      writeInPlace();
      await step();
    }
    assert.deepEqual(resets.slice(0, 3), [true, false, false]);
    assert.equal(resets.filter((r) => r).length, 1, String(resets));
    // A whole rewrite (a new file renamed over it): read whole again.
    body = '## You\n\n    rewritten\n\n';
    fs.writeFileSync(file + '.tmp', documentOf(body));
    fs.renameSync(file + '.tmp', file);
    await step();
    assert.equal(resets[resets.length - 1], true);
    body += 'more\n\n'.repeat(5);
    writeInPlace();
    await step();
    assert.equal(resets[resets.length - 1], false);
    // The same file changed just above the commit point: read whole again.
    const at = committed - HEAD.length - 3;
    body = body.slice(0, at) + 'X' + body.slice(at + 1) + 'the end\n\n';
    writeInPlace();
    await step();
    assert.equal(resets[resets.length - 1], true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
