// Drives the code-server workbench in headless Chromium for the pytest harness
// (harness.py). One JSON request per stdin line, one JSON answer per stdout
// line: {"id", "ok": true, "value"} or {"id", "ok": false, "error"}. Waiting
// is done here with Playwright's own auto-waiting and explicit timeouts.
//
// Scopes: "page" is the workbench; "chat" is the document inside the ACP chat
// webview (VS Code nests it in two iframes: the outer one names the extension).
'use strict';

const readline = require('node:readline');
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const EXTENSION_ID = 'acp-sidecar.acp-sidecar';
let browser;
let page;

function chatFrame() {
  for (const frame of page.frames()) {
    const parent = frame.parentFrame();
    if (parent && parent.url().includes(`extensionId=${EXTENSION_ID}`) && frame !== parent) {
      return frame;
    }
  }
  return undefined;
}

async function scope(name, timeout) {
  if (name === 'page' || name === undefined) {
    return page;
  }
  if (name !== 'chat') {
    throw new Error(`unknown scope ${name}`);
  }
  const deadline = Date.now() + timeout;
  for (;;) {
    const frame = chatFrame();
    if (frame) {
      try {
        await frame.waitForSelector('#composer', { timeout: Math.max(1, Math.min(2000, deadline - Date.now())) });
        return frame;
      } catch (err) {
        // The view was re-created (hidden and shown): look again.
      }
    }
    if (Date.now() > deadline) {
      throw new Error('the ACP chat webview did not appear');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function locate(root, args) {
  let loc = root.locator(args.selector);
  if (args.hasText !== undefined) {
    loc = loc.filter({ hasText: args.hasText });
  }
  if (args.inner) {
    loc = loc.locator(args.inner);
    if (args.innerText !== undefined) {
      loc = loc.filter({ hasText: args.innerText });
    }
  }
  return args.nth === undefined ? loc.first() : loc.nth(args.nth);
}

const commands = {
  async launch(args) {
    browser = await chromium.launch({
      executablePath: args.chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await context.newPage();
    await page.goto(args.url, { timeout: args.timeout });
    await page.waitForSelector('.monaco-workbench .part.statusbar', { timeout: args.timeout });
    return true;
  },

  async waitFor(args) {
    const root = await scope(args.scope, args.timeout);
    await locate(root, args).waitFor({ state: args.state ?? 'visible', timeout: args.timeout });
    return true;
  },

  async click(args) {
    const root = await scope(args.scope, args.timeout);
    await locate(root, args).click({ timeout: args.timeout, modifiers: args.modifiers });
    return true;
  },

  async fill(args) {
    const root = await scope(args.scope, args.timeout);
    await locate(root, args).fill(args.text, { timeout: args.timeout });
    return true;
  },

  async press(args) {
    if (args.selector) {
      const root = await scope(args.scope, args.timeout);
      await locate(root, args).press(args.key, { timeout: args.timeout });
    } else {
      await page.keyboard.press(args.key);
    }
    return true;
  },

  async type(args) {
    await page.keyboard.type(args.text);
    return true;
  },

  /** innerText of every match (at this moment). */
  async texts(args) {
    const root = await scope(args.scope, args.timeout);
    let loc = root.locator(args.selector);
    if (args.hasText !== undefined) {
      loc = loc.filter({ hasText: args.hasText });
    }
    return await loc.allInnerTexts();
  },

  /** innerText of every match, top to bottom as they are placed on screen. */
  async textsTopDown(args) {
    const root = await scope(args.scope, args.timeout);
    const found = await root.locator(args.selector).evaluateAll((els) =>
      els.map((el) => [el.getBoundingClientRect().top, el.innerText]),
    );
    return found.sort((a, b) => a[0] - b[0]).map((pair) => pair[1]);
  },

  /** Whether the last match shows within `container`'s box (the part of a scrolled view on screen). */
  async inView(args) {
    const root = await scope(args.scope, args.timeout);
    return await root
      .locator(args.selector)
      .last()
      .evaluate(
        (el, container) => {
          const box = el.getBoundingClientRect();
          const view = document.querySelector(container).getBoundingClientRect();
          return box.height > 0 && box.bottom > view.top && box.top < view.bottom;
        },
        args.container,
        { timeout: args.timeout },
      );
  },

  async attribute(args) {
    const root = await scope(args.scope, args.timeout);
    return await locate(root, args).getAttribute(args.name, { timeout: args.timeout });
  },

  async value(args) {
    const root = await scope(args.scope, args.timeout);
    return await locate(root, args).inputValue({ timeout: args.timeout });
  },

  async hover(args) {
    const root = await scope(args.scope, args.timeout);
    await locate(root, args).hover({ timeout: args.timeout, position: args.position });
    return true;
  },

  async screenshot(args) {
    await page.screenshot({ path: args.path, timeout: args.timeout });
    return args.path;
  },

  async close() {
    if (browser) {
      await browser.close();
      browser = undefined;
    }
    return true;
  },
};

async function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    return { id: null, ok: false, error: `bad request: ${err.message}` };
  }
  const fn = commands[req.cmd];
  if (!fn) {
    return { id: req.id, ok: false, error: `unknown command ${req.cmd}` };
  }
  try {
    return { id: req.id, ok: true, value: await fn(req.args ?? {}) };
  } catch (err) {
    return { id: req.id, ok: false, error: String(err && err.message ? err.message : err).slice(0, 4000) };
  }
}

const rl = readline.createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on('line', (line) => {
  chain = chain.then(async () => {
    const answer = await handle(line);
    process.stdout.write(JSON.stringify(answer) + '\n');
  });
});
rl.on('close', () => {
  chain.then(() => commands.close()).finally(() => process.exit(0));
});
