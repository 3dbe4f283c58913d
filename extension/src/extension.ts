// Thin client: resolve the interpreter, start `python -m infinite_context.server lsp`, and wire
// the status bar and palette commands to the server's infiniteContext/* requests. No product
// logic lives here.
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from "vscode-languageclient/node";

import { Budget, HistoryItem, historyItems, level, statusText, tooltip } from "./status";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
const budgets = new Map<string, Budget>();

const SECTION = "infiniteContext";

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
  };
}

function activeFolder(): vscode.WorkspaceFolder | undefined {
  const editor = vscode.window.activeTextEditor;
  const fromEditor = editor ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
  return fromEditor ?? vscode.workspace.workspaceFolders?.[0];
}

function renderStatus(): void {
  const folder = activeFolder();
  const budget = folder ? budgets.get(folder.uri.toString()) : undefined;
  statusItem.text = statusText(budget);
  const tip = new vscode.MarkdownString(tooltip(budget));
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

async function request<T>(method: string, params: Record<string, unknown> = {}): Promise<T | undefined> {
  const folder = activeFolder();
  if (!client || client.state !== State.Running || !folder) {
    void vscode.window.showWarningMessage("Infinite Context: the language server is not running (see Show Logs).");
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

async function checkpoint(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const selection = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection) : "";
  const context = await vscode.window.showInputBox({
    title: "Infinite Context: Checkpoint",
    prompt: "What was done, decided and is next (Done: / Current task: / Decided: / Files:)",
    value: selection,
    ignoreFocusOut: true,
  });
  if (!context) {
    return;
  }
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "Infinite Context: merging…" },
    () => request<{ version: number; merged_by: string; state_tokens: number }>("checkpoint", { context }),
  );
  if (result) {
    void vscode.window.showInformationMessage(
      `Checkpoint v${result.version} (merged by ${result.merged_by}, ${result.state_tokens} tokens).`,
    );
  }
}

async function resume(): Promise<void> {
  const result = await request<{ markdown: string }>("resume");
  if (!result) {
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ content: result.markdown, language: "markdown" });
  await vscode.commands.executeCommand("markdown.showPreview", doc.uri);
  const choice = await vscode.window.showInformationMessage("Project brain opened.", "Copy");
  if (choice === "Copy") {
    await vscode.env.clipboard.writeText(result.markdown);
  }
}

async function showStatus(): Promise<void> {
  const status = await request<Record<string, unknown>>("status");
  if (status) {
    output.appendLine(JSON.stringify(status, null, 2));
    output.show(true);
  }
}

async function history(): Promise<HistoryItem[] | undefined> {
  return (await request<{ items: HistoryItem[] }>("history", { limit: 20 }))?.items;
}

async function rollback(): Promise<void> {
  const items = await history();
  if (!items || items.length === 0) {
    void vscode.window.showInformationMessage("Infinite Context: no history yet.");
    return;
  }
  const current = items[0].version;
  const pick = await vscode.window.showQuickPick(historyItems(items, current), {
    title: "Infinite Context: roll back to…",
  });
  if (!pick || pick.version === current) {
    return;
  }
  const sure = await vscode.window.showWarningMessage(
    `Restore v${pick.version}? It is written as a new version; history is kept.`,
    { modal: true },
    "Restore",
  );
  if (sure !== "Restore") {
    return;
  }
  const diff = await request<{ unified: string }>("diff", { from: pick.version, to: current });
  const result = await request<{ version: number }>("rollback", { version: pick.version });
  if (result) {
    void vscode.window.showInformationMessage(`Restored v${pick.version} as v${result.version}.`);
    if (diff?.unified) {
      const doc = await vscode.workspace.openTextDocument({ content: diff.unified, language: "diff" });
      await vscode.window.showTextDocument(doc, { preview: true });
    }
  }
}

async function showHistory(): Promise<void> {
  const items = await history();
  if (items) {
    await vscode.window.showQuickPick(historyItems(items, items[0]?.version ?? 0), { title: "Infinite Context: history" });
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

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const python = await resolveInterpreter();
  const serverOptions: ServerOptions = { command: python, args: ["-m", "infinite_context.server", "lsp"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }],
    outputChannel: output,
    initializationOptions: initializationOptions(),
  };
  client = new LanguageClient("infiniteContext", "Infinite Context", serverOptions, clientOptions);
  context.subscriptions.push(
    client.onNotification("infiniteContext/budget", (budget: Budget) => {
      budgets.set(budget.folderUri, budget);
      renderStatus();
    }),
  );
  output.appendLine(`Starting ${python} -m infinite_context.server lsp`);
  try {
    await client.start();
  } catch (err) {
    output.appendLine(`The language server did not start: ${String(err)}`);
    void vscode.window.showErrorMessage(
      `Infinite Context could not start with ${python}: pip install infinite-context there, or set infiniteContext.interpreter.`,
    );
  }
}

async function restart(context: vscode.ExtensionContext): Promise<void> {
  if (client) {
    await client.stop().catch(() => undefined);
  }
  budgets.clear();
  renderStatus();
  await startClient(context);
}

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
    registerMcpProvider(context, lm, Definition);
  } catch (err) {
    output.appendLine(`MCP server not offered to the editor: ${String(err)}`);
  }
}

function registerMcpProvider(context: vscode.ExtensionContext, lm: McpApi, Definition: McpStdioCtor): void {
  if (!lm.registerMcpServerDefinitionProvider) {
    return;
  }
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
        return [new Definition("Infinite Context", python, ["-m", "infinite_context.server", "mcp"], env)];
      },
    }),
  );
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Infinite Context");
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  statusItem.name = "Infinite Context";
  statusItem.command = "infiniteContext.checkpoint";
  context.subscriptions.push(output, statusItem);
  renderStatus();

  const commands: Record<string, () => Promise<void>> = {
    "infiniteContext.checkpoint": checkpoint,
    "infiniteContext.resume": resume,
    "infiniteContext.showStatus": showStatus,
    "infiniteContext.rollback": rollback,
    "infiniteContext.showHistory": showHistory,
    "infiniteContext.connectClaudeCode": connectClaudeCode,
    "infiniteContext.restartServer": () => restart(context),
    "infiniteContext.showLogs": async () => output.show(),
  };
  for (const [id, run] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  }
  context.subscriptions.push(
    vscode.window.onDidChangeActiveTextEditor(() => renderStatus()),
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
    await client.stop();
  }
}
