// Thin client: resolve the interpreter, start `python -m infinite_context_brain.server lsp`, and wire
// the status item, its menu and the palette commands to the server's infiniteContext/* requests.
// No product logic lives here: Markdown, diffs and history come rendered from the server.
//
// - Multi-root: the item names the folder and follows the last editor (or notebook) that
//   belonged to a folder; a Markdown preview, Settings or an empty editor area keep it.
// - A server that cannot start gets one message naming the cause, and an error state with
//   actions (Select Interpreter, Install into this interpreter, Open Settings, Show Logs).
// - Resume, Status and old versions are read-only virtual documents (no Untitled buffers);
//   History and Rollback compare versions in the diff editor, older on the left.
// - Checkpoint text is written in an editor tab (a file in the extension's storage, one per
//   folder): line breaks and a selection survive, and the draft survives a failed send.
// - Live endless mode: a second item beside the budget shows the per-user proxy's saving
//   (`$(zap) -78%`) from the server's infiniteContext/proxyStatus notifications; with
//   infiniteContext.endless.enabled the server starts the proxy, and new integrated terminals
//   get the variables the server names (ANTHROPIC_BASE_URL) while it runs.
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
  StartProblem,
  checkpointTemplate,
  checkpointText,
  errorTooltip,
  historyItems,
  level,
  menuItems,
  ProxyState,
  proxyLevel,
  proxyMenuItems,
  proxyText,
  proxyTooltip,
  startProblem,
  statusText,
  tooltip,
} from "./status";

const SECTION = "infiniteContext";
const SCHEME = "infinite-context";
const CHECKPOINT_CONTEXT = "infiniteContext.checkpointEditor";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
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
  if (problem) {
    renderProxy();
    statusItem.text = "$(error) Infinite Context";
    const tip = new vscode.MarkdownString(errorTooltip(problem));
    statusItem.tooltip = tip;
    statusItem.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    statusItem.show();
    return;
  }
  renderProxy();
  const budget = folder ? budgets.get(folder.uri.toString()) : undefined;
  statusItem.text = statusText(budget, name);
  const tip = new vscode.MarkdownString(tooltip(budget, new Date(), name));
  tip.supportThemeIcons = true;
  statusItem.tooltip = tip;
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
  const tip = new vscode.MarkdownString(proxyTooltip(proxy));
  tip.supportThemeIcons = true;
  proxyItem.tooltip = tip;
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
  const running = client;
  if (!running || running.state !== State.Running) {
    void vscode.window.showWarningMessage("Infinite Context: the language server is not running; start it first (Restart Server).");
    return;
  }
  try {
    const state = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: action === "start" ? "Starting the live proxy" : "Stopping the live proxy" },
      () => running.sendRequest<ProxyState>("infiniteContext/proxy", { action }),
    );
    onProxyState(state);
    if (action === "stop" && state.enabled) {
      void vscode.window.showInformationMessage(
        "Infinite Context: live proxy stopped. New terminals go to the API directly; Claude Code sessions still routed to it cannot reach the API until it runs again.",
      );
    }
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
  const running = client?.state === State.Running;
  const items = menuItems(running, problem, folder?.name, multiRoot());
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
      output.appendLine(`Python extension did not give an interpreter: ${String(err)}`);
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
        output.appendLine(`${python}: ${stdout.trim()}`);
        resolve(undefined);
        return;
      }
      const code = (err as NodeJS.ErrnoException).code;
      output.appendLine(`${python} -m infinite_context_brain.server --version failed:\n${stderr || String(err)}`);
      resolve(startProblem(python, code, stderr));
    });
  });
}

async function reportProblem(found: StartProblem): Promise<void> {
  problem = found;
  renderStatus();
  const actions =
    found.kind === "not-installed"
      ? ["Install into this interpreter", "Select Interpreter", "Open Settings", "Show Logs"]
      : ["Select Interpreter", "Open Settings", "Show Logs"];
  const choice = await vscode.window.showErrorMessage(`Infinite Context cannot start: ${found.message}`, ...actions);
  const commands: Record<string, string> = {
    "Install into this interpreter": "infiniteContext.installServer",
    "Select Interpreter": "infiniteContext.selectInterpreter",
    "Open Settings": "infiniteContext.openSettings",
    "Show Logs": "infiniteContext.showLogs",
  };
  if (choice) {
    await vscode.commands.executeCommand(commands[choice]);
  }
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  problem = undefined;
  interpreter = await resolveInterpreter();
  renderStatus();
  const found = await checkInterpreter(interpreter);
  if (found) {
    void reportProblem(found);
    return;
  }
  const serverOptions: ServerOptions = { command: interpreter, args: ["-m", "infinite_context_brain.server", "lsp"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }],
    outputChannel: output,
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
  output.appendLine(`Starting ${interpreter} -m infinite_context_brain.server lsp`);
  try {
    await client.start();
  } catch (err) {
    output.appendLine(`The language server did not start: ${String(err)}`);
    void reportProblem({ kind: "failed", message: `${interpreter} -m infinite_context_brain.server lsp did not start (see Show Logs).` });
  }
}

let stopping = false;

async function restart(context: vscode.ExtensionContext): Promise<void> {
  if (client) {
    stopping = true;
    await client.stop().catch(() => undefined);
    stopping = false;
    client = undefined;
  }
  budgets.clear();
  proxy = undefined;
  renderStatus();
  await startClient(context);
}

async function request<T>(method: string, params: Record<string, unknown> = {}, folder = activeFolder()): Promise<T | undefined> {
  if (problem) {
    void reportProblem(problem);
    return undefined;
  }
  if (!client || client.state !== State.Running || !folder) {
    void vscode.window.showWarningMessage(
      folder ? "Infinite Context: the language server is still starting; try again in a moment." : "Infinite Context: open a folder first.",
    );
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

async function selectInterpreter(): Promise<void> {
  const candidates: (vscode.QuickPickItem & { path?: string; run?: string })[] = [];
  if (vscode.extensions.getExtension("ms-python.python")) {
    candidates.push({ label: "$(symbol-misc) Use the Python extension's interpreter…", run: "python.setInterpreter" });
  }
  for (const folder of folders()) {
    for (const rel of [".venv/bin/python", "venv/bin/python", ".venv/Scripts/python.exe"]) {
      const uri = vscode.Uri.joinPath(folder.uri, rel);
      try {
        await vscode.workspace.fs.stat(uri);
        candidates.push({ label: uri.fsPath, description: folder.name, path: uri.fsPath });
      } catch {
        // not there
      }
    }
  }
  candidates.push({ label: "python3", description: "from PATH", path: "python3" });
  candidates.push({ label: "$(folder-opened) Browse…" });
  const pick = await vscode.window.showQuickPick(candidates, {
    title: "Infinite Context: Python interpreter",
    placeHolder: `Now: ${interpreter}`,
  });
  if (!pick) {
    return;
  }
  let path = pick.path;
  if (pick.run) {
    await vscode.commands.executeCommand(pick.run);
    await vscode.workspace.getConfiguration(SECTION).update("interpreter", "", vscode.ConfigurationTarget.Global);
    return;
  }
  if (!path) {
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, title: "Python interpreter with infinite-context" });
    path = picked?.[0]?.fsPath;
  }
  if (path) {
    await vscode.workspace.getConfiguration(SECTION).update("interpreter", path, vscode.ConfigurationTarget.Global);
  }
}

async function installServer(context: vscode.ExtensionContext): Promise<void> {
  const task = new vscode.Task(
    { type: "shell", task: `install ${DISTRIBUTION}` },
    vscode.TaskScope.Workspace,
    `install ${DISTRIBUTION}`,
    "Infinite Context",
    new vscode.ProcessExecution(interpreter, ["-m", "pip", "install", DISTRIBUTION]),
  );
  const execution = await vscode.tasks.executeTask(task);
  const done = vscode.tasks.onDidEndTaskProcess(async (event) => {
    if (event.execution !== execution) {
      return;
    }
    done.dispose();
    if (event.exitCode === 0) {
      void vscode.window.showInformationMessage("Infinite Context installed: starting the server.");
      await restart(context);
    } else {
      void vscode.window.showErrorMessage(`Installing ${DISTRIBUTION} failed (exit ${String(event.exitCode)}): see the terminal.`);
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
    () => request<{ version: number; merged_by: string; state_tokens: number }>("checkpoint", { context }, folder),
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
    `Checkpoint v${result.version} saved in ${folder.name} (merged by ${result.merged_by}, ${result.state_tokens} tokens).`,
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

async function connectClaudeCode(): Promise<void> {
  const result = await request<{ changes: string[] }>("installClaudeCode", { scope: "project" });
  if (result) {
    void vscode.window.showInformationMessage(
      result.changes.length ? `Claude Code connected: ${result.changes.length} change(s).` : "Claude Code was already connected.",
    );
  }
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
    output.appendLine("This VS Code has no MCP server API: not offering the MCP server.");
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
    output.appendLine(`MCP server not offered to the editor: ${String(err)}`);
  }
}

// ---- activation -----------------------------------------------------------------------------

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Infinite Context");
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
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  if (client) {
    stopping = true;
    await client.stop();
  }
}
