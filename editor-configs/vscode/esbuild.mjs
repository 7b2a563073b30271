// Bundles the extension (one file, no node_modules in the .vsix) and the chat
// webview's script into out/; with --tests, only the unit tests of test/ (each
// with the pure modules it tests) into out/test/, which the .vsix never carries.
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';

const common = { bundle: true, sourcemap: true, logLevel: 'warning', target: 'es2022' };

if (process.argv.includes('--tests')) {
  const tests = readdirSync('test').filter((f) => f.endsWith('.test.ts'));
  await build({
    ...common,
    entryPoints: tests.map((f) => `test/${f}`),
    outdir: 'out/test',
    platform: 'node',
    format: 'cjs',
    external: ['vscode'],
  });
  process.exit(0);
}

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
