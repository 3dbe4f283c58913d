// Pure helpers (no vscode import) so they run under node:test.

export interface Budget {
  folderUri: string;
  contextTokens?: number | null;
  contextWindow?: number | null;
  memoryTokens?: number | null;
  memoryBudget?: number | null;
  version: number;
  lastCheckpoint?: string | null;
  mergedBy?: string | null;
  refining?: string | null;
  store?: string | null;
  currentTask?: string | null;
}

export interface HistoryItem {
  version: number;
  timestamp: string;
  merged_by: string;
  first_line: string;
}

export type Level = "normal" | "warning" | "error";

/** The Python distribution on PyPI ("infinite-context" there is an unrelated project). */
export const DISTRIBUTION = "infinite-context-brain";
export const WARNING_SHARE = 0.75;
export const ERROR_SHARE = 0.9;

/** 142000 -> "142k", 1500000 -> "1.5M", 900 -> "900". */
export function compact(tokens: number): string {
  if (tokens >= 1_000_000) {
    return `${Number((tokens / 1_000_000).toFixed(1))}M`;
  }
  if (tokens >= 1000) {
    return `${Math.round(tokens / 1000)}k`;
  }
  return String(tokens);
}

/** User text made literal in a MarkdownString: `List<T>` stays `List<T>`, `*x*` stays `*x*`. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~&]/g, "\\$&");
}

/** Status bar text can hold `$(icon)` syntax: user text must not start one. */
function plainLabel(text: string): string {
  return text.replace(/\$\(/g, "$\u200b(");
}

/**
 * The status bar text: context use if a Claude Code session is live, else the memory budget.
 * `folder` (the workspace folder's name) is shown when more than one folder is open.
 */
export function statusText(b: Budget | undefined, folder?: string): string {
  const where = folder ? ` ${plainLabel(folder)}` : "";
  if (!b) {
    return folder ? `$(history)${where}` : "$(history) Infinite Context";
  }
  const version = b.version > 0 ? ` · v${b.version}` : " · no checkpoint";
  const refining = b.refining ? " $(sync~spin)" : "";
  const sep = folder ? " ·" : "";
  if (b.contextTokens != null && b.contextWindow) {
    return `$(history)${where}${sep} ${compact(b.contextTokens)}/${compact(b.contextWindow)}${version}${refining}`;
  }
  if (b.memoryTokens != null && b.memoryBudget) {
    return `$(history)${where}${sep} mem ${compact(b.memoryTokens)}/${compact(b.memoryBudget)}${version}${refining}`;
  }
  return `$(history)${where}${version}${refining}`;
}

/** Warning at >= 75% of the context window, error at >= 90%. */
export function level(b: Budget | undefined): Level {
  if (!b || b.contextTokens == null || !b.contextWindow) {
    return "normal";
  }
  const share = b.contextTokens / b.contextWindow;
  if (share >= ERROR_SHARE) {
    return "error";
  }
  return share >= WARNING_SHARE ? "warning" : "normal";
}

export function age(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) {
    return "never";
  }
  const seconds = Math.max(0, (now.getTime() - new Date(iso).getTime()) / 1000);
  if (seconds < 60) {
    return "just now";
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  return `${Math.floor(seconds / 86400)} d ago`;
}

/** Markdown for the status bar tooltip (every piece of user text escaped). */
export function tooltip(b: Budget | undefined, now: Date = new Date(), folder?: string): string {
  if (!b) {
    return "Infinite Context: starting the language server…";
  }
  const lines = [folder ? `**Infinite Context** · ${escapeMarkdown(folder)}` : "**Infinite Context**", ""];
  if (b.contextTokens != null && b.contextWindow) {
    const pct = Math.round((100 * b.contextTokens) / b.contextWindow);
    lines.push(`- Context: ${b.contextTokens.toLocaleString("en")} / ${b.contextWindow.toLocaleString("en")} tokens (${pct}%)`);
  } else {
    lines.push("- Context: no live Claude Code session in this folder");
  }
  if (b.memoryTokens != null && b.memoryBudget) {
    lines.push(`- Working memory: ${b.memoryTokens.toLocaleString("en")} / ${b.memoryBudget.toLocaleString("en")} tokens`);
  }
  lines.push(
    b.version > 0
      ? `- Checkpoint v${b.version}, ${age(b.lastCheckpoint, now)}, merged by ${b.mergedBy ?? "?"}`
      : "- No checkpoint yet: Checkpoint (in the menu) saves what you are working on",
  );
  if (b.refining) {
    lines.push(`- Refining with ${escapeMarkdown(b.refining)}`);
  }
  if (b.currentTask) {
    lines.push(`- Current task: ${escapeMarkdown(b.currentTask)}`);
  }
  if (b.store) {
    lines.push(`- Store: ${escapeMarkdown(b.store)}`);
  }
  lines.push("", "_Click for the menu: checkpoint, resume, history, rollback, settings, logs._");
  return lines.join("\n");
}

export interface PickItem {
  label: string;
  description: string;
  detail: string;
  version: number;
}

/** QuickPick items for Rollback: newest first, the current version marked. */
export function historyItems(items: HistoryItem[], current: number): PickItem[] {
  return items.map((h) => ({
    label: `v${h.version}${h.version === current ? " (current)" : ""}`,
    description: `${h.timestamp.replace("T", " ").slice(0, 16)} · ${h.merged_by}`,
    detail: h.first_line || "(no task)",
    version: h.version,
  }));
}

/** Why the language server cannot start, from the interpreter check's outcome. */
export interface StartProblem {
  kind: "no-interpreter" | "not-installed" | "failed";
  message: string;
}

export function startProblem(python: string, code: string | number | null | undefined, stderr: string): StartProblem {
  if (code === "ENOENT" || code === "EACCES") {
    return { kind: "no-interpreter", message: `the Python interpreter ${python} was not found (or cannot run).` };
  }
  const missing = /No module named '?(infinite_context_brain[\w.]*|pygls[\w.]*)'?/.exec(stderr);
  if (missing) {
    return {
      kind: "not-installed",
      message: `${python} does not have infinite-context installed (No module named '${missing[1]}').`,
    };
  }
  const last = stderr.trim().split(/\r?\n/).filter(Boolean).pop() ?? `exit status ${String(code)}`;
  return { kind: "failed", message: `${python} -m infinite_context_brain.server failed: ${last}` };
}

/** Status bar text and tooltip for the error state. */
export function errorTooltip(problem: StartProblem): string {
  return [
    "**Infinite Context cannot start**",
    "",
    escapeMarkdown(problem.message),
    "",
    "Click for: Select Interpreter, Install into this interpreter, Open Settings, Show Logs.",
  ].join("\n");
}

export interface MenuItem {
  label: string;
  description?: string;
  detail?: string;
  command: string;
}

/** The status item's menu: what a person can do here, in the order they reach for it. */
export function menuItems(running: boolean, problem: StartProblem | undefined, folder?: string, multiRoot = false): MenuItem[] {
  if (problem) {
    return [
      { label: "$(error) Infinite Context cannot start", detail: problem.message, command: "infiniteContext.showLogs" },
      { label: "$(symbol-misc) Select Interpreter…", description: "a Python with infinite-context", command: "infiniteContext.selectInterpreter" },
      { label: "$(cloud-download) Install into this interpreter", description: `pip install ${DISTRIBUTION}`, command: "infiniteContext.installServer" },
      { label: "$(gear) Open Settings", command: "infiniteContext.openSettings" },
      { label: "$(output) Show Logs", command: "infiniteContext.showLogs" },
      { label: "$(refresh) Restart Server", command: "infiniteContext.restartServer" },
    ];
  }
  const items: MenuItem[] = [
    { label: "$(edit) Checkpoint…", description: "save what was done, decided and is next", command: "infiniteContext.checkpoint" },
    { label: "$(book) Resume", description: "open the project brain (read-only)", command: "infiniteContext.resume" },
    { label: "$(history) History…", description: "view, compare or restore a version", command: "infiniteContext.showHistory" },
    { label: "$(discard) Rollback…", description: "restore an earlier version", command: "infiniteContext.rollback" },
    { label: "$(info) Status", command: "infiniteContext.showStatus" },
  ];
  if (multiRoot) {
    items.push({ label: "$(root-folder) Switch Folder…", description: folder ? `now: ${folder}` : undefined, command: "infiniteContext.selectFolder" });
  }
  items.push(
    { label: "$(gear) Settings", command: "infiniteContext.openSettings" },
    { label: "$(output) Logs", command: "infiniteContext.showLogs" },
    { label: "$(plug) Connect Claude Code", command: "infiniteContext.connectClaudeCode" },
    { label: running ? "$(refresh) Restart Server" : "$(play) Start Server", command: "infiniteContext.restartServer" },
  );
  return items;
}

const TEMPLATE_END = "-->";

/** The multi-line checkpoint editor's text: an instruction comment, then the draft. */
export function checkpointTemplate(folder: string, draft: string): string {
  return [
    `<!-- Checkpoint for "${folder.replace(/-->/g, "")}": what was done, decided and is next`,
    "     (Done: / Current task: / Decided: / Files: path/to/file).",
    "     Ctrl+Enter (or the check mark above) saves it into the project brain.",
    "     Close the tab to keep this draft for later. This comment is not sent. -->",
    "",
    draft,
  ].join("\n");
}

/** What the checkpoint editor holds, without the instruction comment; "" if nothing. */
export function checkpointText(text: string): string {
  const trimmed = text.replace(/^\uFEFF/, "");
  if (trimmed.trimStart().startsWith("<!--")) {
    const end = trimmed.indexOf(TEMPLATE_END);
    if (end >= 0) {
      return trimmed.slice(end + TEMPLATE_END.length).trim();
    }
  }
  return trimmed.trim();
}

// ---- live endless mode (the per-user proxy) -------------------------------------------------

/** The `infiniteContext/proxyStatus` notification / `infiniteContext/proxy` answer. */
export interface ProxyState {
  enabled: boolean;
  running: boolean;
  /** the setting's start is under way */
  starting?: boolean;
  /** the last start failed, or a setting is invalid (problem and fix say which) */
  startFailed?: boolean;
  url?: string | null;
  pid?: number | null;
  upstream?: string | null;
  requests: number;
  transformed: number;
  epochs: number;
  tokensBefore: number;
  tokensAfter: number;
  savedTokens: number;
  savedShare?: number | null;
  lastBefore: number;
  lastAfter: number;
  lastSavedTokens: number;
  lastSavedShare?: number | null;
  lastOverheadMs: number;
  problem?: string | null;
  fix?: string | null;
  log?: string | null;
  terminalEnv: Record<string, string>;
}

/** The item beside the budget: hidden (undefined) when the setting is off and no proxy runs. */
export function proxyText(p: ProxyState | undefined): string | undefined {
  if (!p || (!p.enabled && !p.running && !p.startFailed)) {
    return undefined;
  }
  if (p.starting && !p.running) {
    return "$(zap) $(sync~spin)";
  }
  if (!p.running) {
    return p.problem && (p.enabled || p.startFailed) ? "$(zap) $(warning) off" : "$(zap) off";
  }
  if (p.savedShare == null) {
    return "$(zap) live";
  }
  return `$(zap) -${Math.round(100 * p.savedShare)}%`;
}

/** A proxy that should run and does not (or does not answer) is a warning. */
export function proxyLevel(p: ProxyState | undefined): Level {
  return p && p.problem && (p.enabled || p.running || p.startFailed) ? "warning" : "normal";
}

function share(value: number | null | undefined): string {
  return value == null ? "" : ` (-${Math.round(100 * value)}%)`;
}

/** Markdown for the item's tooltip: the figures, then how to act on it. */
export function proxyTooltip(p: ProxyState): string {
  const lines = ["**Infinite Context · live endless mode**", ""];
  if (p.running) {
    lines.push(`- Proxy ${escapeMarkdown(p.url ?? "?")} → ${escapeMarkdown(p.upstream ?? "?")} (pid ${String(p.pid ?? "?")})`);
    if (p.transformed === 0) {
      lines.push("- No request through it yet: start `claude` in a new integrated terminal");
    } else {
      const last = `${p.lastBefore.toLocaleString("en")} → ${p.lastAfter.toLocaleString("en")}`;
      lines.push(`- Last request: tool results ${last} tokens${share(p.lastSavedShare)}`);
      const total = `${p.tokensBefore.toLocaleString("en")} → ${p.tokensAfter.toLocaleString("en")}`;
      lines.push(`- In total: ${p.savedTokens.toLocaleString("en")} tokens saved, ${total}${share(p.savedShare)}`);
      lines.push(`- ${p.transformed} of ${p.requests} requests transformed, ${p.epochs} epoch(s), last overhead ${p.lastOverheadMs} ms`);
    }
    lines.push(
      Object.keys(p.terminalEnv).length > 0
        ? "- New integrated terminals: Claude Code goes through it (ANTHROPIC\\_BASE\\_URL)"
        : `- Integrated terminals: not routed (infiniteContext.endless.${p.enabled ? "terminals" : "enabled"} is off)`,
    );
  } else if (p.starting) {
    lines.push("- Starting the live proxy…");
  } else if (!p.problem) {
    lines.push("- The live proxy is not running");
  }
  if (p.problem) {
    if (p.running) {
      lines.push("");
    }
    lines.push(`$(warning) ${escapeMarkdown(p.problem)}`);
    if (p.fix) {
      lines.push("", `Fix: ${escapeMarkdown(p.fix)}`);
    }
  }
  lines.push("", `_Click to ${p.running ? "stop the proxy, open its log or settings" : "start the proxy, open its log or settings"}._`);
  return lines.join("\n");
}

/** The item's menu. */
export function proxyMenuItems(p: ProxyState | undefined): MenuItem[] {
  const items: MenuItem[] = p?.running
    ? [{ label: "$(debug-stop) Stop Live Proxy", description: p.url ?? undefined, command: "infiniteContext.stopProxy" }]
    : [{ label: "$(play) Start Live Proxy", description: p?.problem ?? undefined, command: "infiniteContext.startProxy" }];
  if (p?.log) {
    items.push({ label: "$(output) Open Proxy Log", description: p.log, command: "infiniteContext.openProxyLog" });
  }
  items.push({ label: "$(gear) Live Endless Mode Settings", command: "infiniteContext.openEndlessSettings" });
  return items;
}
