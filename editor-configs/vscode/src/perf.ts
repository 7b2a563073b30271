// A probe of the chat's cost, on only when ACP_SIDECAR_VSCODE_PERF names a file: one JSON line per
// flush of the conversation (`host`: the milliseconds the extension host spent on it, parsing the
// document's new pieces since the last flush included; `read`: the wall time of those pieces'
// reads, awaits included, so other work of the host counts in it; the document's size; the
// longest event-loop delay since the last line) and one per change the webview applied (`view`:
// its milliseconds, its longest task since the last report). bench/vscode_flush.py reads it.
import * as fs from 'node:fs';
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

export class PerfProbe {
  private parse = 0;
  private read = 0;
  private size = 0;
  private lines: string[] = [];
  private readonly loop: IntervalHistogram;
  private readonly timer: ReturnType<typeof setInterval>;

  static fromEnv(): PerfProbe | undefined {
    const file = process.env.ACP_SIDECAR_VSCODE_PERF;
    return file ? new PerfProbe(file) : undefined;
  }

  private constructor(private readonly file: string) {
    this.loop = monitorEventLoopDelay({ resolution: 10 });
    this.loop.enable();
    this.timer = setInterval(() => this.write(), 250);
  }

  /** A piece of the document was read (`readMs`, wall time) and parsed (`ms`); the file has `size` bytes. */
  fed(ms: number, readMs: number, size: number): void {
    this.parse += ms;
    this.read += readMs;
    this.size = size;
  }

  /** A flush took `ms` (rendering, the message to the webview). */
  flushed(ms: number): void {
    const loop = this.loop.max / 1e6;
    this.loop.reset();
    const line = { side: 'host', ms: this.parse + ms, read: this.read, size: this.size, loop };
    this.lines.push(JSON.stringify(line));
    this.parse = 0;
    this.read = 0;
  }

  /** The webview applied a change in `ms`; its longest task since its last report. */
  view(ms: number, longTask: number): void {
    this.lines.push(JSON.stringify({ side: 'view', ms, longTask, size: this.size }));
  }

  private write(): void {
    if (this.lines.length > 0) {
      const text = this.lines.join('\n') + '\n';
      this.lines = [];
      fs.appendFile(this.file, text, () => undefined);
    }
  }

  dispose(): void {
    clearInterval(this.timer);
    this.loop.disable();
    if (this.lines.length > 0) {
      fs.appendFileSync(this.file, this.lines.join('\n') + '\n');
      this.lines = [];
    }
  }
}
