// Thin client: resolve the interpreter, start `python -m infinite_context_brain.server lsp`, and wire
// the status item, its menu and the palette commands to the server's infiniteContext/* requests.
// No product logic lives here: Markdown (documents and tooltips, user text escaped once by the
// server), diffs, history, the brain's size and times come rendered from the server.
//
// - Multi-root: the item names the folder (shortened, never at the cost of the figures) and
//   follows the last editor (or notebook) that belonged to a folder; a Markdown preview,
//   Settings or an empty editor area keep it.
// - Both status items carry an accessible name (the figures in words, not the tooltip's Markdown).
// - Commands run while the server starts wait for it, with a progress notification.
// - A server that cannot start gets one message naming the cause with at most two buttons (the
//   fix that can work first; everything else is in the item's menu), and an error state.
// - Select Interpreter works like the Python extension's: the interpreter in use listed and
//   marked, each candidate probed (version, package), a choice checked before it is saved,
//   a workspace's own interpreter saved in the workspace's settings, Browse from the workspace.
// - Resume, Status and old versions are read-only virtual documents (no Untitled buffers);
//   History and Rollback compare versions in the diff editor, older on the left.
// - Checkpoint text is written in an editor tab (a file in the extension's storage, one per
//   folder): line breaks and a selection survive, and the draft survives a failed send.
// - Live endless mode: a second item beside the budget shows the per-user proxy's saving from
//   the server's infiniteContext/proxyStatus notifications; with infiniteContext.endless.enabled
//   the server starts the proxy, and new integrated terminals get the variables the server names
//   (ANTHROPIC_BASE_URL) while it runs. Stopping it asks first (sessions may be using it).
// - The server's JSON log lines are shown in a log output channel, one readable line each.
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
} from "vscode-languageclient/node";

import {
  Budget,
  DISTRIBUTION,
  HistoryItem,
  InterpreterFacts,
  PROBE,
  StartProblem,
  accessibleLabel,
  checkpointTemplate,
  checkpointText,
  errorTooltip,
  historyItems,
  interpreterDescription,
  interpreterFacts,
  interpreterLabel,
  interpreterScope,
  level,
  logLine,
  menuItems,
  problemActions,
  ProxyState,
  proxyAccessibleLabel,
  proxyLevel,
  proxyMenuItems,
  proxyText,
  startProblem,
  statusText,
  withInstallFacts,
} from "./status";

const SECTION = "infiniteContext";
const SCHEME = "infinite-context";
const CHECKPOINT_CONTEXT = "infiniteContext.checkpointEditor";

let client: LanguageClient | undefined;
/** the current start: true once the server runs, false if it cannot start */
let starting: Promise<boolean> = Promise.resolve(false);
let output: vscode.LogOutputChannel;
let statusItem: vscode.StatusBarItem;
let proxyItem: vscode.StatusBarItem;
let proxy: ProxyState | undefined;
let terminalEnv: vscode.GlobalEnvironmentVariableCollection;
let problem: StartProblem | undefined;
let interpreter = "python3";
let lastFolder: vscode.WorkspaceFolder | undefined;
let storage: vscode.Uri;
const budgets = new Map<string, Budget>();
const docsChanged = new vscode.EventEmitter<vscode.Uri>();

// ---- folders --------------------------------------------------------------------------------

function folders(): readonly vscode.WorkspaceFolder[] {
  return vscode.workspace.workspaceFolders ?? [];
}

function folderByUri(uri: string | null | undefined): vscode.WorkspaceFolder | undefined {
  return uri ? folders().find((f) => f.uri.toString() === uri) : undefined;
}

/** The folder a document belongs to: its own, or the one our virtual / checkpoint document is for. */
function folderOf(uri: vscode.Uri): vscode.WorkspaceFolder | undefined {
  if (uri.scheme === SCHEME) {
    return folderByUri(new URLSearchParams(uri.query).get("folder"));
  }
  if (isCheckpointDoc(uri)) {
    return folders().find((f) => checkpointUri(f).toString() === uri.toString());
  }
  return uri.scheme === "file" || uri.scheme === "vscode-notebook-cell" || uri.scheme === "untitled"
    ? vscode.workspace.getWorkspaceFolder(uri)
    : undefined;
}

/** The folder commands act on: the last one an editor belonged to, else the only/first one. */
function activeFolder(): vscode.WorkspaceFolder | undefined {
  if (lastFolder && folderByUri(lastFolder.uri.toString())) {
    return lastFolder;
  }
  return folders()[0];
}

function multiRoot(): boolean {
  return folders().length > 1;
}

function noteUri(uri: vscode.Uri | undefined): void {
  const folder = uri ? folderOf(uri) : undefined;
  if (folder) {
    lastFolder = folder;
  }
  void vscode.commands.executeCommand("setContext", CHECKPOINT_CONTEXT, uri ? isCheckpointDoc(uri) : false);
  renderStatus();
}

// ---- status item ----------------------------------------------------------------------------

function renderStatus(): void {
  const folder = activeFolder();
  const name = multiRoot() ? folder?.name : undefined;
  renderProxy();
  if (problem) {
    statusItem.text = "$(error) Infinite Context";
    statusItem.tooltip = errorTooltip(problem);
    statusItem.accessibilityInformation = { label: `Infinite Context cannot start: ${problem.message}`, role: "button" };
    statusItem.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    statusItem.show();
    return;
  }
  const budget = folder ? budgets.get(folder.uri.toString()) : undefined;
  statusItem.text = statusText(budget, name);
  statusItem.accessibilityInformation = { label: accessibleLabel(budget, name), role: "button" };
  if (budget?.tooltip) {
    const tip = new vscode.MarkdownString(budget.tooltip);
    tip.supportThemeIcons = true;
    statusItem.tooltip = tip;
  } else {
    statusItem.tooltip = "Infinite Context: starting the language server…";
  }
  const severity = level(budget);
  statusItem.backgroundColor =
    severity === "error"
      ? new vscode.ThemeColor("statusBarItem.errorBackground")
      : severity === "warning"
        ? new vscode.ThemeColor("statusBarItem.warningBackground")
        : undefined;
  statusItem.show();
}

function renderProxy(): void {
  const text = problem || !client ? undefined : proxyText(proxy);
  if (!text || !proxy) {
    proxyItem.hide();
    return;
  }
  proxyItem.text = text;
  proxyItem.accessibilityInformation = { label: proxyAccessibleLabel(proxy), role: "button" };
  if (proxy.tooltip) {
    const tip = new vscode.MarkdownString(proxy.tooltip);
    tip.supportThemeIcons = true;
    proxyItem.tooltip = tip;
  }
  proxyItem.backgroundColor = proxyLevel(proxy) === "warning" ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  proxyItem.show();
}

/** New integrated terminals get exactly what the server says (nothing while no proxy runs). */
function applyTerminalEnv(env: Record<string, string>): void {
  const wanted = Object.entries(env);
  const same = wanted.length === countEnv() && wanted.every(([k, v]) => terminalEnv.get(k)?.value === v);
  if (same) {
    return;
  }
  terminalEnv.clear();
  for (const [name, value] of wanted) {
    terminalEnv.replace(name, value);
  }
}

function countEnv(): number {
  let n = 0;
  terminalEnv.forEach(() => (n += 1));
  return n;
}

let warnedProblem: string | undefined;

function onProxyState(state: ProxyState): void {
  proxy = state;
  applyTerminalEnv(state.terminalEnv ?? {});
  renderProxy();
  // One message per new failure while the setting asks for the proxy; the item keeps showing it.
  const failure = state.startFailed && !state.running && state.problem ? state.problem : undefined;
  if (failure && failure !== warnedProblem) {
    void vscode.window
      .showWarningMessage(`Infinite Context: the live proxy did not start: ${failure}${state.fix ? ` Fix: ${state.fix}` : ""}`, "Open Settings", "Open Proxy Log")
      .then((choice) => {
        if (choice === "Open Settings") {
          void vscode.commands.executeCommand("infiniteContext.openEndlessSettings");
        } else if (choice === "Open Proxy Log") {
          void vscode.commands.executeCommand("infiniteContext.openProxyLog");
        }
      });
  }
  warnedProblem = failure;
}

async function proxyAction(action: "start" | "stop"): Promise<void> {
  if (!(await serverReady())) {
    return;
  }
  const live = client;
  if (!live) {
    return;
  }
  if (action === "stop" && proxy?.running) {
    // One proxy per user: Claude Code sessions started in routed terminals (or by
    // `install claude-code --endless`) send every request through it.
    const sure = await vscode.window.showWarningMessage(
      "Stop the live proxy?",
      {
        modal: true,
        detail:
          `Claude Code sessions that go through it (ANTHROPIC_BASE_URL=${proxy.url ?? "?"}) cannot reach the API until it runs again. ` +
          "New integrated terminals go to the API directly. Start Live Proxy (in this item's menu) starts it again.",
      },
      "Stop Proxy",
    );
    if (sure !== "Stop Proxy") {
      return;
    }
  }
  try {
    const state = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: action === "start" ? "Starting the live proxy" : "Stopping the live proxy" },
      () => live.sendRequest<ProxyState>("infiniteContext/proxy", { action }),
    );
    onProxyState(state);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    void vscode.window.showErrorMessage(`Infinite Context: ${message}`);
  }
}

async function showProxyMenu(): Promise<void> {
  const pick = await vscode.window.showQuickPick(proxyMenuItems(proxy), { title: "Infinite Context · live endless mode" });
  if (pick) {
    await vscode.commands.executeCommand(pick.command);
  }
}

async function openProxyLog(): Promise<void> {
  if (!proxy?.log) {
    void vscode.window.showInformationMessage("Infinite Context: no proxy log yet.");
    return;
  }
  try {
    await vscode.window.showTextDocument(vscode.Uri.file(proxy.log), { preview: true });
  } catch {
    void vscode.window.showInformationMessage(`Infinite Context: no proxy log yet (${proxy.log}).`);
  }
}

async function showMenu(): Promise<void> {
  const folder = activeFolder();
  const items = menuItems(running(), problem, folder?.name, multiRoot());
  const pick = await vscode.window.showQuickPick(items, {
    title: folder && multiRoot() ? `Infinite Context · ${folder.name}` : "Infinite Context",
    placeHolder: problem ? "The language server cannot start: what to do" : "What to do",
  });
  if (pick) {
    await vscode.commands.executeCommand(pick.command);
  }
}

async function selectFolder(): Promise<void> {
  const picked = await vscode.window.showWorkspaceFolderPick({ placeHolder: "Which folder's brain?" });
  if (picked) {
    lastFolder = picked;
    renderStatus();
  }
}

// ---- server ---------------------------------------------------------------------------------

async function resolveInterpreter(): Promise<string> {
  const configured = vscode.workspace.getConfiguration(SECTION).get<string>("interpreter");
  if (configured) {
    return configured;
  }
  const python = vscode.extensions.getExtension("ms-python.python");
  if (python) {
    try {
      const api = python.isActive ? python.exports : await python.activate();
      const env = api?.environments?.getActiveEnvironmentPath?.();
      const resolved = env ? await api.environments.resolveEnvironment(env) : undefined;
      const path: string | undefined = resolved?.executable?.uri?.fsPath;
      if (path) {
        return path;
      }
    } catch (err) {
      output.warn(`Python extension did not give an interpreter: ${String(err)}`);
    }
  }
  return "python3";
}

function initializationOptions(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SECTION);
  return {
    storeUrl: config.get("storeUrl") || undefined,
    budget: config.get("budget") ?? undefined,
    merge: config.get("merge") || undefined,
    contextWindow: config.get("contextWindow") ?? undefined,
    endlessEnabled: config.get<boolean>("endless.enabled") ?? false,
    endlessPort: config.get<number | null>("endless.port") ?? undefined,
    endlessTerminals: config.get<boolean>("endless.terminals") ?? true,
  };
}

/** Can this interpreter run the server? (One short process; its error names the cause.) */
function checkInterpreter(python: string): Promise<StartProblem | undefined> {
  return new Promise((resolve) => {
    execFile(python, ["-m", "infinite_context_brain.server", "--version"], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (!err) {
        output.info(`${python}: ${stdout.trim()}`);
        resolve(undefined);
        return;
      }
      const code = (err as NodeJS.ErrnoException).code;
      output.warn(`${python} -m infinite_context_brain.server --version failed:\n${stderr || String(err)}`);
      const found = startProblem(python, code, stderr);
      if (found.kind !== "not-installed") {
        resolve(found);
        return;
      }
      void probe(python).then((facts) => resolve(withInstallFacts(found, facts)));
    });
  });
}

/** Version, package, pip of an interpreter (undefined: it does not run). */
function probe(python: string): Promise<InterpreterFacts | undefined> {
  return new Promise((resolve) => {
    execFile(python, ["-c", PROBE], { timeout: 30_000 }, (err, stdout) => resolve(err ? undefined : interpreterFacts(stdout)));
  });
}

async function reportProblem(found: StartProblem): Promise<void> {
  problem = found;
  renderStatus();
  const actions = problemActions(found);
  const text = [found.message, found.hint].filter(Boolean).join(" ");
  const choice = await vscode.window.showErrorMessage(`Infinite Context cannot start: ${text}`, ...actions);
  const commands: Record<string, string> = {
    "Install into this interpreter": "infiniteContext.installServer",
    "Select Interpreter": "infiniteContext.selectInterpreter",
    "Show Logs": "infiniteContext.showLogs",
  };
  if (choice) {
    await vscode.commands.executeCommand(commands[choice]);
  }
}

function running(): boolean {
  return client?.state === State.Running;
}

/** Wait for a start under way (with progress); false when the server is not running after it. */
async function serverReady(): Promise<boolean> {
  if (running()) {
    return true;
  }
  if (!problem) {
    const ready = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Infinite Context: waiting for the language server to start…" },
      () => starting,
    );
    if (ready && running()) {
      return true;
    }
  }
  if (problem) {
    void reportProblem(problem);
  } else {
    void vscode.window.showWarningMessage("Infinite Context: the language server is not running (Restart Server in the item's menu).");
  }
  return false;
}

/** The languageclient writes the server's stderr here in chunks: whole lines go to the log
 * channel, each JSON log line as its message, fields and level. */
function serverOutput(log: vscode.LogOutputChannel): vscode.OutputChannel {
  let pending = "";
  const write = (line: string): void => {
    if (!line.trim()) {
      return;
    }
    const { level: at, text } = logLine(line);
    log[at](text);
  };
  return {
    name: log.name,
    append(value: string): void {
      const lines = (pending + value).split(/\r?\n/);
      pending = lines.pop() ?? "";
      lines.forEach(write);
    },
    appendLine(value: string): void {
      write(pending + value);
      pending = "";
    },
    replace: (value: string) => log.replace(value),
    clear: () => log.clear(),
    show: (...args: unknown[]) => log.show(...(args as [boolean?])),
    hide: () => log.hide(),
    dispose: () => undefined, // the log channel is disposed with the extension
  };
}

async function startClient(context: vscode.ExtensionContext): Promise<boolean> {
  problem = undefined;
  const python = await resolveInterpreter();
  interpreter = python;
  renderStatus();
  const found = await checkInterpreter(python);
  if (found) {
    void reportProblem(found);
    return false;
  }
  const serverOptions: ServerOptions = { command: python, args: ["-m", "infinite_context_brain.server", "lsp"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }],
    outputChannel: serverOutput(output),
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: initializationOptions(),
    // One message of our own, not the client's five generic ones; no restart loop.
    initializationFailedHandler: () => false,
    errorHandler: {
      error: () => ({ action: ErrorAction.Shutdown, handled: true }),
      closed: () => {
        if (!stopping) {
          void reportProblem({ kind: "failed", message: "the language server stopped (see Show Logs)." });
        }
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
  };
  client = new LanguageClient("infiniteContext", "Infinite Context", serverOptions, clientOptions);
  context.subscriptions.push(
    client.onNotification("infiniteContext/budget", (budget: Budget) => {
      const before = budgets.get(budget.folderUri);
      budgets.set(budget.folderUri, budget);
      if (before?.version !== budget.version) {
        refreshDocs(budget.folderUri);
      }
      renderStatus();
    }),
    client.onNotification("infiniteContext/proxyStatus", onProxyState),
  );
  output.info(`Starting ${python} -m infinite_context_brain.server lsp`);
  try {
    await client.start();
  } catch (err) {
    output.error(`The language server did not start: ${String(err)}`);
    void reportProblem({ kind: "failed", message: `${python} -m infinite_context_brain.server lsp did not start (see Show Logs).` });
    return false;
  }
  return true;
}

let stopping = false;
/** the last start or restart; the next one runs after it (settings can change twice in a row) */
let restarting: Promise<void> = Promise.resolve();
let restartQueued = false;

/** Stop the server and start it again, after any start under way; requests made meanwhile
 * wait for the new start. Restarts asked for while one is queued are that one. */
function restart(context: vscode.ExtensionContext): Promise<void> {
  if (!restartQueued) {
    restartQueued = true;
    const run = restarting.then(async () => {
      restartQueued = false;
      if (client) {
        stopping = true;
        await client.stop().catch(() => undefined);
        stopping = false;
        client = undefined;
      }
      budgets.clear();
      proxy = undefined;
      renderStatus();
      return startClient(context);
    });
    starting = run;
    restarting = run.then(() => undefined);
  }
  return restarting;
}

async function request<T>(method: string, params: Record<string, unknown> = {}, folder = activeFolder()): Promise<T | undefined> {
  if (!folder) {
    void vscode.window.showWarningMessage("Infinite Context: open a folder first.");
    return undefined;
  }
  if (!(await serverReady()) || !client) {
    return undefined;
  }
  try {
    return await client.sendRequest<T>(`infiniteContext/${method}`, { folderUri: folder.uri.toString(), ...params });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    void vscode.window.showErrorMessage(`Infinite Context: ${message}`);
    return undefined;
  }
}

type InterpreterPick = vscode.QuickPickItem & { path?: string; run?: string; browse?: boolean };

/** The interpreters to offer: the one in use first, then each folder's virtual environments,
 * python3 from PATH; each probed (in parallel) for its version and the package. */
async function interpreterItems(): Promise<InterpreterPick[]> {
  const paths: { path: string; where?: string }[] = [{ path: interpreter, where: "in use" }];
  for (const folder of folders()) {
    for (const rel of [".venv/bin/python", "venv/bin/python", ".venv/Scripts/python.exe", "venv/Scripts/python.exe"]) {
      const uri = vscode.Uri.joinPath(folder.uri, rel);
      try {
        await vscode.workspace.fs.stat(uri);
        paths.push({ path: uri.fsPath, where: folder.name });
      } catch {
        // not there
      }
    }
  }
  paths.push({ path: "python3", where: "from PATH" });
  const unique = paths.filter((p, i) => paths.findIndex((q) => q.path === p.path) === i);
  const facts = await Promise.all(unique.map((p) => probe(p.path)));
  const shown = folders().map((f) => ({ name: f.name, path: f.uri.fsPath }));
  const items: InterpreterPick[] = unique.map((p, i) => {
    const inUse = p.path === interpreter;
    const label = interpreterLabel(p.path, shown);
    return {
      label: `${inUse ? "$(check) " : ""}${label}`,
      description: interpreterDescription(facts[i], inUse),
      detail: label !== p.path ? p.path : p.where === "from PATH" ? "from PATH" : undefined,
      path: p.path,
    };
  });
  if (vscode.extensions.getExtension("ms-python.python")) {
    items.push({ label: "$(symbol-misc) Use the Python extension's interpreter…", run: "python.setInterpreter" });
  }
  items.push({ label: "$(folder-opened) Browse…", description: "a Python in the workspace or anywhere", browse: true });
  return items;
}

async function selectInterpreter(): Promise<void> {
  const pick = await vscode.window.showQuickPick(interpreterItems(), {
    title: "Infinite Context: Select Interpreter",
    placeHolder: `In use: ${interpreter}`,
    matchOnDescription: true,
  });
  if (!pick) {
    return;
  }
  const config = vscode.workspace.getConfiguration(SECTION);
  if (pick.run) {
    await vscode.commands.executeCommand(pick.run);
    await config.update("interpreter", undefined, vscode.ConfigurationTarget.Workspace);
    await config.update("interpreter", undefined, vscode.ConfigurationTarget.Global);
    return;
  }
  let path = pick.path;
  if (pick.browse) {
    const picked = await vscode.window.showOpenDialog({
      canSelectMany: false,
      canSelectFolders: false,
      defaultUri: activeFolder()?.uri,
      openLabel: "Select Interpreter",
      title: `A Python interpreter with ${DISTRIBUTION}`,
    });
    path = picked?.[0]?.fsPath;
  }
  if (path) {
    await useInterpreter(path);
  }
}

/** Save ``path`` as the interpreter if it can run the server; otherwise say why (and offer the
 * install when that can work), and save nothing. */
async function useInterpreter(path: string): Promise<void> {
  const found = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Infinite Context: checking ${path}…` },
    () => checkInterpreter(path),
  );
  if (found) {
    const text = [found.message, found.hint].filter(Boolean).join(" ");
    const install = found.installable ? [`Install ${DISTRIBUTION} into It`] : [];
    const choice = await vscode.window.showWarningMessage(`Infinite Context: not selected: ${text}`, ...install);
    if (choice) {
      await install_(path, async () => saveInterpreter(path));
    }
    return;
  }
  await saveInterpreter(path);
}

async function saveInterpreter(path: string): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  if (interpreterScope(path, folders().map((f) => f.uri.fsPath)) === "workspace") {
    await config.update("interpreter", path, vscode.ConfigurationTarget.Workspace);
  } else {
    // A workspace value would win over the user's: the choice must take effect.
    if (config.inspect<string>("interpreter")?.workspaceValue !== undefined) {
      await config.update("interpreter", undefined, vscode.ConfigurationTarget.Workspace);
    }
    await config.update("interpreter", path, vscode.ConfigurationTarget.Global);
  }
}

async function installServer(context: vscode.ExtensionContext): Promise<void> {
  const facts = await probe(interpreter);
  const can = withInstallFacts({ kind: "not-installed", message: "" }, facts);
  if (!facts || !can.installable) {
    const why = facts ? (can.hint ?? "") : `${interpreter} does not run.`;
    void vscode.window.showErrorMessage(`Infinite Context: cannot install into ${interpreter}: ${why}`, "Select Interpreter").then(
      (choice) => choice && vscode.commands.executeCommand("infiniteContext.selectInterpreter"),
    );
    return;
  }
  await install_(interpreter, () => restart(context));
}

/** `python -m pip install` the distribution as a task (its terminal shows pip's output). */
async function install_(python: string, then: () => Promise<void>): Promise<void> {
  const task = new vscode.Task(
    { type: "shell", task: `install ${DISTRIBUTION}` },
    vscode.TaskScope.Workspace,
    `install ${DISTRIBUTION}`,
    "Infinite Context",
    new vscode.ProcessExecution(python, ["-m", "pip", "install", DISTRIBUTION]),
  );
  const execution = await vscode.tasks.executeTask(task);
  const done = vscode.tasks.onDidEndTaskProcess(async (event) => {
    if (event.execution !== execution) {
      return;
    }
    done.dispose();
    if (event.exitCode === 0) {
      void vscode.window.showInformationMessage(`Infinite Context: ${DISTRIBUTION} installed into ${python}; starting the server.`);
      await then();
    } else if (event.exitCode === undefined) {
      void vscode.window.showErrorMessage(`Installing ${DISTRIBUTION} did not run: ${python} could not be started. Select another interpreter.`);
    } else {
      void vscode.window.showErrorMessage(`Installing ${DISTRIBUTION} into ${python} failed (pip exited with ${event.exitCode}): see the terminal.`);
    }
  });
}

// ---- read-only documents --------------------------------------------------------------------

type DocKind = "resume" | "status" | number;

function docUri(folder: vscode.WorkspaceFolder, kind: DocKind): vscode.Uri {
  const name = kind === "resume" ? "Resume" : kind === "status" ? "Status" : `v${kind}`;
  return vscode.Uri.from({
    scheme: SCHEME,
    path: `/${folder.name}/${name} (${folder.name}).md`,
    query: new URLSearchParams({ folder: folder.uri.toString(), kind: String(kind) }).toString(),
  });
}

function refreshDocs(folderUri: string): void {
  for (const doc of vscode.workspace.textDocuments) {
    const q = new URLSearchParams(doc.uri.query);
    if (doc.uri.scheme === SCHEME && q.get("folder") === folderUri && (q.get("kind") === "resume" || q.get("kind") === "status")) {
      docsChanged.fire(doc.uri);
    }
  }
}

const provider: vscode.TextDocumentContentProvider = {
  onDidChange: docsChanged.event,
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const q = new URLSearchParams(uri.query);
    const folder = folderByUri(q.get("folder"));
    const kind = q.get("kind");
    if (!folder) {
      return "This folder is no longer open.";
    }
    if (kind === "resume") {
      return (await request<{ markdown: string }>("resume", {}, folder))?.markdown ?? "Not available (see Show Logs).";
    }
    if (kind === "status") {
      return (await request<{ markdown: string }>("status", {}, folder))?.markdown ?? "Not available (see Show Logs).";
    }
    const shown = await request<{ markdown: string }>("show", { version: Number(kind) }, folder);
    return shown?.markdown ?? `Version ${kind} is not available (see Show Logs).`;
  },
};

async function openDoc(folder: vscode.WorkspaceFolder, kind: DocKind): Promise<void> {
  if (!(await serverReady())) {
    return; // no tab that says "not available"
  }
  const doc = await vscode.workspace.openTextDocument(docUri(folder, kind));
  await vscode.window.showTextDocument(doc, { preview: true });
}

// ---- checkpoint -----------------------------------------------------------------------------

function checkpointUri(folder: vscode.WorkspaceFolder): vscode.Uri {
  let hash = 0;
  for (const ch of folder.uri.toString()) {
    hash = (hash * 31 + ch.charCodeAt(0)) | 0;
  }
  const safe = folder.name.replace(/[^\w.-]+/g, "_");
  return vscode.Uri.joinPath(storage, "checkpoints", `Checkpoint ${safe} ${(hash >>> 0).toString(16)}.md`);
}

function isCheckpointDoc(uri: vscode.Uri): boolean {
  return uri.scheme === storage.scheme && uri.path.startsWith(vscode.Uri.joinPath(storage, "checkpoints").path + "/");
}

async function readText(uri: vscode.Uri): Promise<string> {
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return "";
  }
}

async function checkpoint(): Promise<void> {
  const folder = activeFolder();
  if (!folder) {
    void vscode.window.showWarningMessage("Infinite Context: open a folder first.");
    return;
  }
  const editor = vscode.window.activeTextEditor;
  const selection =
    editor && !editor.selection.isEmpty && folderOf(editor.document.uri)?.uri.toString() === folder.uri.toString()
      ? editor.document.getText(editor.selection)
      : "";
  const uri = checkpointUri(folder);
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  const draft = open ? checkpointText(open.getText()) : checkpointText(await readText(uri));
  const body = [draft, selection].filter(Boolean).join("\n\n");
  if (!open || selection) {
    await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(storage, "checkpoints"));
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(checkpointTemplate(folder.name, body ? body + "\n" : "")));
  }
  const doc = await vscode.workspace.openTextDocument(uri);
  const shown = await vscode.window.showTextDocument(doc, { preview: false });
  const end = doc.lineAt(doc.lineCount - 1).range.end;
  shown.selection = new vscode.Selection(end, end);
}

async function acceptCheckpoint(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || !isCheckpointDoc(editor.document.uri)) {
    await checkpoint();
    return;
  }
  const doc = editor.document;
  const folder = folderOf(doc.uri);
  const context = checkpointText(doc.getText());
  if (!folder) {
    void vscode.window.showWarningMessage("Infinite Context: this checkpoint's folder is no longer open.");
    return;
  }
  if (!context) {
    void vscode.window.showWarningMessage("Infinite Context: write what was done, decided or is next first.");
    return;
  }
  await doc.save();
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Infinite Context: merging into ${folder.name}…` },
    () => request<{ version: number; merged_by: string; state_tokens: number; token_cap: number }>("checkpoint", { context }, folder),
  );
  if (!result) {
    return; // the draft stays in its tab and on disk
  }
  await vscode.workspace.fs.writeFile(doc.uri, new TextEncoder().encode(checkpointTemplate(folder.name, "")));
  const tabs = vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter((tab) => tab.input instanceof vscode.TabInputText && tab.input.uri.toString() === doc.uri.toString());
  await vscode.window.tabGroups.close(tabs);
  lastFolder = folder;
  renderStatus();
  void vscode.window.showInformationMessage(
    `Checkpoint v${result.version} saved in ${folder.name}: brain ${result.state_tokens.toLocaleString("en")} / ${result.token_cap.toLocaleString("en")} tokens, merged by ${result.merged_by}.`,
  );
}

// ---- resume / status / history / rollback ---------------------------------------------------

async function resume(): Promise<void> {
  const folder = activeFolder();
  if (folder) {
    await openDoc(folder, "resume");
  }
}

async function showStatus(): Promise<void> {
  const folder = activeFolder();
  if (folder) {
    await openDoc(folder, "status");
  }
}

async function history(folder: vscode.WorkspaceFolder): Promise<HistoryItem[] | undefined> {
  const items = (await request<{ items: HistoryItem[] }>("history", {}, folder))?.items;
  if (items && items.length === 0) {
    const choice = await vscode.window.showInformationMessage(`Infinite Context: no checkpoint yet in ${folder.name}.`, "Checkpoint…");
    if (choice) {
      await checkpoint();
    }
    return undefined;
  }
  return items;
}

async function compare(folder: vscode.WorkspaceFolder, left: number, right: number, title: string): Promise<void> {
  await vscode.commands.executeCommand("vscode.diff", docUri(folder, left), docUri(folder, right), title, { preview: true });
}

async function restore(folder: vscode.WorkspaceFolder, version: number, current: number): Promise<void> {
  const sure = await vscode.window.showWarningMessage(
    `Restore v${version} in ${folder.name}? It is written as a new version; history is kept.`,
    { modal: true },
    "Restore",
  );
  if (sure !== "Restore") {
    return;
  }
  const result = await request<{ version: number }>("rollback", { version }, folder);
  if (result) {
    void vscode.window.showInformationMessage(`Restored v${version} as v${result.version} in ${folder.name}.`);
    await compare(folder, current, result.version, `v${current} → v${result.version} (restored v${version}) · ${folder.name}`);
  }
}

async function showHistory(): Promise<void> {
  const folder = activeFolder();
  const items = folder ? await history(folder) : undefined;
  if (!folder || !items) {
    return;
  }
  const current = items[0].version;
  const pick = await vscode.window.showQuickPick(historyItems(items, current), {
    title: `Infinite Context: history of ${folder.name}`,
    placeHolder: "Pick a version to view, compare or restore",
  });
  if (!pick) {
    return;
  }
  const actions = [{ label: `$(book) View v${pick.version}`, action: "view" }];
  if (pick.version !== current) {
    actions.push(
      { label: `$(diff) Compare v${pick.version} with the current v${current}`, action: "diff" },
      { label: `$(discard) Restore v${pick.version}…`, action: "restore" },
    );
  }
  const chosen = await vscode.window.showQuickPick(actions, { title: `v${pick.version} · ${pick.detail}` });
  if (chosen?.action === "view") {
    await openDoc(folder, pick.version);
  } else if (chosen?.action === "diff") {
    await compare(folder, pick.version, current, `v${pick.version} ↔ v${current} (current) · ${folder.name}`);
  } else if (chosen?.action === "restore") {
    await restore(folder, pick.version, current);
  }
}

async function rollback(): Promise<void> {
  const folder = activeFolder();
  const items = folder ? await history(folder) : undefined;
  if (!folder || !items) {
    return;
  }
  const current = items[0].version;
  const older = historyItems(items, current).filter((i) => i.version !== current);
  if (older.length === 0) {
    void vscode.window.showInformationMessage(`Infinite Context: ${folder.name} has only v${current}; nothing to roll back to.`);
    return;
  }
  const pick = await vscode.window.showQuickPick(older, { title: `Infinite Context: roll ${folder.name} back to…` });
  if (pick) {
    await restore(folder, pick.version, current);
  }
}

interface InstallReport {
  files: string[];
  problems: string[];
  restart: string;
}

/** The installer's report as the person needs it: what stands in the way first, else the files
 *  changed and what to do for Claude Code to pick them up (the server words both). */
async function connectClaudeCode(): Promise<void> {
  const result = await request<InstallReport>("installClaudeCode", { scope: "project" });
  if (!result) {
    return;
  }
  const files = result.files.map((f) => vscode.workspace.asRelativePath(f));
  for (const line of [...files.map((f) => `changed ${f}`), ...result.problems, result.restart]) {
    if (line) {
      output.info(`Connect Claude Code: ${line}`);
    }
  }
  if (result.problems.length) {
    const more = result.problems.length > 1 ? ` (+${result.problems.length - 1} more)` : "";
    const pick = await vscode.window.showWarningMessage(`Claude Code: ${result.problems[0]}${more}`, "Show Details");
    if (pick) {
      output.show();
    }
    return;
  }
  void vscode.window.showInformationMessage(
    files.length ? `Claude Code connected: ${files.join(", ")}. ${result.restart}`.trim() : "Claude Code was already connected.",
  );
}

// ---- MCP ------------------------------------------------------------------------------------

interface McpApi {
  registerMcpServerDefinitionProvider?: (id: string, provider: unknown) => vscode.Disposable;
}
type McpStdioCtor = new (label: string, command: string, args: string[], env?: Record<string, string>) => unknown;

/** Offers the MCP server to the editor's assistant where VS Code has the API (1.101+). */
function registerMcp(context: vscode.ExtensionContext): void {
  const lm = (vscode as unknown as { lm?: McpApi }).lm;
  const Definition = (vscode as unknown as { McpStdioServerDefinition?: McpStdioCtor }).McpStdioServerDefinition;
  if (!lm?.registerMcpServerDefinitionProvider || !Definition) {
    output.info("This VS Code has no MCP server API: not offering the MCP server.");
    return;
  }
  // VS Code 1.100 had this API under the older contribution name (modelContextServerCollections,
  // also declared in package.json); a mismatch throws: never let it stop the extension.
  try {
    context.subscriptions.push(
      lm.registerMcpServerDefinitionProvider("infiniteContext.mcp", {
        provideMcpServerDefinitions: async () => {
          const python = await resolveInterpreter();
          const folder = activeFolder();
          const env: Record<string, string> = folder ? { PROJECT_ROOT: folder.uri.fsPath } : {};
          const storeUrl = vscode.workspace.getConfiguration(SECTION).get<string>("storeUrl");
          if (storeUrl) {
            env.INFINITE_CONTEXT_STORE_URL = storeUrl;
          }
          return [new Definition("Infinite Context", python, ["-m", "infinite_context_brain.server", "mcp"], env)];
        },
      }),
    );
  } catch (err) {
    output.warn(`MCP server not offered to the editor: ${String(err)}`);
  }
}

// ---- activation -----------------------------------------------------------------------------

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Infinite Context", { log: true });
  storage = context.globalStorageUri;
  statusItem = vscode.window.createStatusBarItem("infiniteContext.status", vscode.StatusBarAlignment.Left, 100);
  statusItem.name = "Infinite Context";
  statusItem.command = "infiniteContext.menu";
  proxyItem = vscode.window.createStatusBarItem("infiniteContext.liveProxy", vscode.StatusBarAlignment.Left, 99);
  proxyItem.name = "Infinite Context: live endless mode";
  proxyItem.command = "infiniteContext.proxyMenu";
  // Not cached across reloads: a stale proxy URL must never reach a terminal before the server
  // has said the proxy answers.
  terminalEnv = context.environmentVariableCollection;
  terminalEnv.persistent = false;
  terminalEnv.description = "Infinite Context: Claude Code goes through the live endless-mode proxy (infiniteContext.endless.enabled)";
  terminalEnv.clear();
  context.subscriptions.push(output, statusItem, proxyItem, docsChanged);
  noteUri(vscode.window.activeTextEditor?.document.uri);

  const commands: Record<string, () => Promise<void>> = {
    "infiniteContext.menu": showMenu,
    "infiniteContext.checkpoint": checkpoint,
    "infiniteContext.acceptCheckpoint": acceptCheckpoint,
    "infiniteContext.resume": resume,
    "infiniteContext.showStatus": showStatus,
    "infiniteContext.rollback": rollback,
    "infiniteContext.showHistory": showHistory,
    "infiniteContext.selectFolder": selectFolder,
    "infiniteContext.connectClaudeCode": connectClaudeCode,
    "infiniteContext.restartServer": () => restart(context),
    "infiniteContext.selectInterpreter": selectInterpreter,
    "infiniteContext.installServer": () => installServer(context),
    "infiniteContext.openSettings": async () => {
      await vscode.commands.executeCommand("workbench.action.openSettings", "infiniteContext");
    },
    "infiniteContext.showLogs": async () => output.show(),
    "infiniteContext.proxyMenu": showProxyMenu,
    "infiniteContext.startProxy": () => proxyAction("start"),
    "infiniteContext.stopProxy": () => proxyAction("stop"),
    "infiniteContext.openProxyLog": openProxyLog,
    "infiniteContext.openEndlessSettings": async () => {
      await vscode.commands.executeCommand("workbench.action.openSettings", "infiniteContext.endless");
    },
  };
  for (const [id, run] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  }
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, provider),
    vscode.window.onDidChangeActiveTextEditor((editor) => noteUri(editor?.document.uri)),
    vscode.window.onDidChangeActiveNotebookEditor((editor) => noteUri(editor?.notebook.uri)),
    vscode.workspace.onDidChangeWorkspaceFolders(() => renderStatus()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(SECTION)) {
        void restart(context);
      }
    }),
  );
  registerMcp(context);
  // Not awaited: the commands are there at once, and wait for the server themselves.
  starting = startClient(context);
  restarting = starting.then(() => undefined);
}

export async function deactivate(): Promise<void> {
  if (client) {
    stopping = true;
    await client.stop();
  }
}
