// The sidecar as a language server: one LanguageClient at a time. Start, stop
// and restart run one after another (a queue), so a restart never overlaps a
// start and never leaves a second sidecar behind; restarts asked for while one
// is waiting to run are one restart. The rest of the extension listens to the
// events here and never holds a client.
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  MessageType,
  ServerOptions,
  ShowMessageNotification,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import {
  AcpCommand,
  AcpNotification,
  PermissionParams,
  SessionInfoParams,
  SessionUpdateParams,
  Settings,
  StatusParams,
  TurnParams,
  ElicitationParams,
  featuresUnknownTo,
  initializationOptions,
  refusedNewerOptions,
} from './protocol';

const CLIENT_ID = 'acpSidecar';
const STOP_TIMEOUT_MS = 5000;

/** What this sidecar offers beyond the basics (it may predate parts of docs/protocol.md), from its
 * answer to `initialize`: its commands, and the version in its `serverInfo`. */
export interface Features {
  /** `acp.session.transcript`: the conversation document of a session. */
  conversationDocuments: boolean;
  /** `acp/permission` with `notify.permissionDialog: false`: this extension shows permission requests. */
  permissionNotifications: boolean;
}

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration('acpSidecar');
  return {
    agentCommand: c.get<string[]>('agent.command', []),
    agentEnv: c.get<Record<string, string>>('agent.env', {}),
    permissions: c.get<string>('permissions', 'ask'),
    renameTimeoutMs: c.get<number>('rename.timeoutMs', 120000),
    renameFallback: c.get<string>('rename.fallback', 'keep_local'),
    titlesMaxLength: c.get<number>('titles.maxLength', 500),
    changesSeverity: c.get<string>('changes.severity', 'hint'),
    changesFollow: c.get<boolean>('changes.follow', false),
    agents: c.get<Record<string, unknown>>('agents', {}),
    defaultAgent: c.get<string>('defaultAgent', ''),
  };
}

export class Sidecar implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private queuedRestart: Promise<void> | undefined;
  private lastStatus: StatusParams | undefined;

  private readonly statusEmitter = new vscode.EventEmitter<StatusParams | undefined>();
  private readonly sessionInfoEmitter = new vscode.EventEmitter<SessionInfoParams>();
  private readonly updateEmitter = new vscode.EventEmitter<SessionUpdateParams>();
  private readonly turnEmitter = new vscode.EventEmitter<TurnParams>();
  private readonly permissionEmitter = new vscode.EventEmitter<PermissionParams>();
  private readonly elicitationEmitter = new vscode.EventEmitter<ElicitationParams>();
  private readonly startedEmitter = new vscode.EventEmitter<Features>();
  readonly onStatus = this.statusEmitter.event;
  readonly onSessionInfo = this.sessionInfoEmitter.event;
  readonly onSessionUpdate = this.updateEmitter.event;
  readonly onTurn = this.turnEmitter.event;
  readonly onPermission = this.permissionEmitter.event;
  readonly onElicitation = this.elicitationEmitter.event;
  /** A sidecar was started (again): its features. */
  readonly onStarted = this.startedEmitter.event;

  constructor(private readonly log: vscode.OutputChannel) {}

  get status(): StatusParams | undefined {
    return this.lastStatus;
  }

  get running(): boolean {
    return this.client !== undefined && this.client.state === State.Running;
  }

  get features(): Features {
    const result = this.client?.initializeResult;
    const commands = result?.capabilities.executeCommandProvider?.commands ?? [];
    return {
      conversationDocuments: commands.includes(AcpCommand.sessionTranscript),
      permissionNotifications: result !== undefined && !featuresUnknownTo(result.serverInfo).includes('permissionDialog'),
    };
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.queue.then(step, step);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Starts the sidecar unless it runs or is starting; resolves when that start is done. */
  ensureStarted(): Promise<void> {
    if (this.client && this.client.state !== State.Stopped) {
      return this.queue;
    }
    return this.enqueue(() => this.startNow());
  }

  /** Stops the running sidecar (waiting for it to exit) and starts a new one. */
  restart(): Promise<void> {
    if (this.queuedRestart) {
      return this.queuedRestart;
    }
    const restart = this.enqueue(async () => {
      this.queuedRestart = undefined;
      await this.stopNow();
      await this.startNow();
    });
    this.queuedRestart = restart;
    return restart;
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.stopNow());
  }

  private async startNow(): Promise<void> {
    if (this.client && this.client.state !== State.Stopped) {
      return;
    }
    if (this.client) {
      await this.stopNow(); // it crashed for good: dispose it before a new one registers the same commands
    }
    const client = this.createClient();
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      this.client = undefined;
      const message = err instanceof Error ? err.message : String(err);
      this.log.appendLine(`could not start the sidecar: ${message}`);
      try {
        await client.dispose(STOP_TIMEOUT_MS);
      } catch {
        // It never ran.
      }
      this.setStatus({ ...(this.lastStatus ?? { sessionId: null, title: null }), state: 'error' });
      void vscode.window.showErrorMessage(
        `ACP: could not start the sidecar (${message}). Check the "acpSidecar.path" setting ("ACP: Show sidecar log" has details).`,
      );
      return;
    }
    this.startedEmitter.fire(this.features);
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) {
      return;
    }
    try {
      // shutdown + exit, then the process is killed if it has not exited (vscode-languageclient).
      await client.dispose(STOP_TIMEOUT_MS);
    } catch (err) {
      this.log.appendLine(`stopping the sidecar: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.setStatus(undefined);
  }

  private setStatus(status: StatusParams | undefined): void {
    this.lastStatus = status;
    this.statusEmitter.fire(status);
  }

  private createClient(): LanguageClient {
    const c = vscode.workspace.getConfiguration('acpSidecar');
    const command = c.get<string>('path', 'acp-sidecar') || 'acp-sidecar';
    const args = c.get<string[]>('args', []);
    const serverOptions: ServerOptions = {
      run: { command, args, transport: TransportKind.stdio },
      debug: { command, args, transport: TransportKind.stdio },
    };
    const clientOptions: LanguageClientOptions = {
      // Every document: the sidecar serves code actions and file access for all of them.
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
      initializationOptions: () => initializationOptions(readSettings()),
      outputChannel: this.log,
      progressOnInitialization: false,
    };
    const client = new LanguageClient(CLIENT_ID, 'ACP Sidecar', serverOptions, clientOptions);
    const current = (): boolean => this.client === client;
    client.onNotification(AcpNotification.status, (p: StatusParams) => current() && this.setStatus(p));
    client.onNotification(AcpNotification.sessionInfo, (p: SessionInfoParams) => current() && this.sessionInfoEmitter.fire(p));
    client.onNotification(AcpNotification.sessionUpdate, (p: SessionUpdateParams) => current() && this.updateEmitter.fire(p));
    client.onNotification(AcpNotification.turn, (p: TurnParams) => current() && this.turnEmitter.fire(p));
    client.onNotification(AcpNotification.permission, (p: PermissionParams) => current() && this.permissionEmitter.fire(p));
    client.onNotification(AcpNotification.elicitation, (p: ElicitationParams) => current() && this.elicitationEmitter.fire(p));
    // Replaces vscode-languageclient's own handler: the same, except for the
    // options this extension sends that an older sidecar does not know yet. The
    // sidecar's version in its answer to `initialize` (`serverInfo`) says which
    // those are; its report of exactly those goes to the log, not to the user.
    client.onNotification(ShowMessageNotification.type, (p) => {
      const unknown = featuresUnknownTo(client.initializeResult?.serverInfo);
      const refused = unknown.length > 0 ? refusedNewerOptions(p.message) : undefined;
      if (refused && refused.every((feature) => unknown.includes(feature))) {
        this.log.appendLine(`this sidecar predates ${refused.join(' and ')}; falling back: ${p.message}`);
        return;
      }
      const show =
        p.type === MessageType.Error
          ? vscode.window.showErrorMessage
          : p.type === MessageType.Warning
            ? vscode.window.showWarningMessage
            : vscode.window.showInformationMessage;
      void show(p.message);
    });
    client.onDidChangeState((e) => {
      if (current() && e.newState === State.Stopped && this.lastStatus) {
        this.setStatus({ ...this.lastStatus, state: 'disconnected' });
      }
    });
    return client;
  }

  /** Runs a sidecar command (starting the sidecar first if needed); errors are thrown. */
  async exec<T>(command: string, arg: Record<string, unknown> = {}): Promise<T> {
    await this.ensureStarted();
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw new Error('the sidecar is not running (see "ACP: Show sidecar log")');
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] })) as T;
  }

  /** The sidecar's position for a VS Code range (its negotiated encoding is VS Code's UTF-16). */
  asRange(range: vscode.Range): unknown {
    return this.client?.code2ProtocolConverter.asRange(range);
  }

  dispose(): void {
    void this.stop();
  }

  /** For deactivate: stop and wait. */
  async shutdown(): Promise<void> {
    await this.stop();
  }
}
