// Bundles the extension (one file, no node_modules in the .vsix), the chat
// webview's script, and the unit tests (each with the pure modules it tests).
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';

const common = { bundle: true, sourcemap: true, logLevel: 'warning', target: 'es2022' };

await build({
  ...common,
  entryPoints: ['src/extension.ts'],
  outfile: 'out/extension.js',
  platform: 'node',
  format: 'cjs',
  external: ['vscode'],
  minify: true,
});

await build({
  ...common,
  entryPoints: ['src/webview/chat.ts'],
  outfile: 'out/webview/chat.js',
  platform: 'browser',
  format: 'iife',
  minify: true,
});

const tests = readdirSync('src/test').filter((f) => f.endsWith('.test.ts'));
await build({
  ...common,
  entryPoints: tests.map((f) => `src/test/${f}`),
  outdir: 'out/test',
  platform: 'node',
  format: 'cjs',
  external: ['vscode'],
});
