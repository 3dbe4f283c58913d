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
  /** the brain's size, as `status` and a checkpoint report it */
  stateTokens?: number | null;
  tokenCap?: number | null;
  /** the hover, rendered by the server (Markdown, user text escaped there) */
  tooltip?: string | null;
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

/** Status bar text can hold `$(icon)` syntax: user text must not start one. */
function plainLabel(text: string): string {
  return text.replace(/\$\(/g, "$\u200b(");
}

/**
 * The status bar text: context use if a Claude Code session is live, else the memory budget.
 * `folder` (the workspace folder's name) is shown when more than one folder is open.
 */
export function statusText(b: Budget | undefined, folder?: string): string {
  const where = folder ? ` ${plainLabel(shortName(folder))}` : "";
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

/** Folder names longer than this are shortened in the middle, so a long name never pushes the
 * figures (context or memory, version) out of the item: they matter more than the name. VS Code
 * cuts an item at 40% of the window's width: at 800 px, room for about 45 characters beside
 * the icon, and the longest figures (" · mem 100k/100k · no checkpoint") take 31 of them. */
export const NAME_LIMIT = 14;

/** "a-very-long-project-folder-name" -> "a-very-long-…folder-name" (the end tells folders apart
 * as often as the start). */
export function shortName(name: string, limit = NAME_LIMIT): string {
  const chars = [...name];
  if (chars.length <= limit) {
    return name;
  }
  const head = Math.ceil((limit - 1) / 2);
  const tail = limit - 1 - head;
  return `${chars.slice(0, head).join("")}…${chars.slice(chars.length - tail).join("")}`;
}

/** What a screen reader says for the status item: the figures in words, no Markdown, no icons. */
export function accessibleLabel(b: Budget | undefined, folder?: string): string {
  const head = folder ? `Infinite Context, ${folder}` : "Infinite Context";
  if (!b) {
    return `${head}: starting the language server`;
  }
  const parts: string[] = [];
  if (b.contextTokens != null && b.contextWindow) {
    const pct = Math.round((100 * b.contextTokens) / b.contextWindow);
    parts.push(`context ${compact(b.contextTokens)} of ${compact(b.contextWindow)} tokens, ${pct} percent`);
  } else if (b.memoryTokens != null && b.memoryBudget) {
    parts.push(`working memory ${compact(b.memoryTokens)} of ${compact(b.memoryBudget)} tokens`);
  }
  parts.push(b.version > 0 ? `checkpoint version ${b.version}` : "no checkpoint yet");
  if (b.refining) {
    parts.push("refining");
  }
  return `${head}: ${parts.join(", ")}`;
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

/** An ISO time as every surface of the product writes it: "2026-01-01 10:00 UTC". */
export function shownTime(iso: string | null | undefined): string {
  if (!iso) {
    return "never";
  }
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
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
    description: `${shownTime(h.timestamp)} · ${h.merged_by}`,
    detail: h.first_line || "(no task)",
    version: h.version,
  }));
}

/** Why the language server cannot start, from the interpreter check's outcome. */
export interface StartProblem {
  kind: "no-interpreter" | "not-installed" | "failed";
  message: string;
  /** pip can install the package into this interpreter (it has pip; not a system Python) */
  installable?: boolean;
  /** what to do instead when it cannot */
  hint?: string;
}

export function startProblem(python: string, code: string | number | null | undefined, stderr: string): StartProblem {
  if (code === "ENOENT" || code === "EACCES") {
    return { kind: "no-interpreter", message: `the Python interpreter ${python} was not found (or cannot run).` };
  }
  const missing = /No module named '?(infinite_context_brain[\w.]*|pygls[\w.]*)'?/.exec(stderr);
  if (missing) {
    return {
      kind: "not-installed",
      message: `${python} does not have ${DISTRIBUTION} installed (No module named '${missing[1]}').`,
    };
  }
  const last = stderr.trim().split(/\r?\n/).filter(Boolean).pop() ?? `exit status ${String(code)}`;
  return { kind: "failed", message: `${python} -m infinite_context_brain.server failed: ${last}` };
}

/** A Python interpreter as the probe below reports it. */
export interface InterpreterFacts {
  python: string;
  /** the installed version of the package, null without it */
  server: string | null;
  pip: boolean;
  /** a system Python that refuses pip installs (PEP 668) */
  managed: boolean;
  venv: boolean;
}

/** Run with `python -c`: what the picker shows and whether installing can work. Standard library
 * only: it runs in interpreters without the package. */
export const PROBE = [
  "import importlib.util, json, os, sys, sysconfig",
  "try:",
  "    from importlib.metadata import version",
  `    server = version(${JSON.stringify(DISTRIBUTION)})`,
  "except Exception:",
  "    server = None",
  "venv = sys.prefix != sys.base_prefix",
  "managed = not venv and os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED'))",
  "print(json.dumps({'python': '%d.%d.%d' % sys.version_info[:3], 'server': server,",
  "    'pip': importlib.util.find_spec('pip') is not None, 'managed': managed, 'venv': venv}))",
].join("\n");

export function interpreterFacts(stdout: string): InterpreterFacts | undefined {
  try {
    const facts = JSON.parse(stdout.trim().split(/\r?\n/).pop() ?? "") as InterpreterFacts;
    return typeof facts.python === "string" ? facts : undefined;
  } catch {
    return undefined;
  }
}

/** A not-installed problem made precise: can pip put the package into this interpreter, and if
 * not, what instead. */
export function withInstallFacts(problem: StartProblem, facts: InterpreterFacts | undefined): StartProblem {
  if (problem.kind !== "not-installed") {
    return problem;
  }
  if (!facts?.pip) {
    return { ...problem, installable: false, hint: "It has no pip: select another interpreter, or create a virtual environment (python3 -m venv .venv) and install into it." };
  }
  if (facts.managed) {
    return { ...problem, installable: false, hint: "It is the system's Python, which refuses pip installs: create a virtual environment (python3 -m venv .venv), install into it, then select it." };
  }
  return { ...problem, installable: true };
}

/** The error toast's buttons: the one fix that can work, and one more; the rest is in the menu. */
export function problemActions(problem: StartProblem): string[] {
  return problem.installable ? ["Install into this interpreter", "Select Interpreter"] : ["Select Interpreter", "Show Logs"];
}

/** The error state's tooltip: plain text (no Markdown: nothing to escape). */
export function errorTooltip(problem: StartProblem): string {
  const actions = menuItems(false, problem)
    .slice(1)
    .map((i) => i.label.replace(/^\$\([\w~-]+\) /, "").replace(/…$/, ""));
  return ["Infinite Context cannot start", "", problem.message, ...(problem.hint ? [problem.hint] : []), "", `Click for: ${actions.join(", ")}.`].join("\n");
}

/** What the picker says of an interpreter. */
export function interpreterDescription(facts: InterpreterFacts | undefined, inUse: boolean): string {
  const use = inUse ? "in use · " : "";
  if (!facts) {
    return `${use}does not run`;
  }
  const has = facts.server ? `${DISTRIBUTION} ${facts.server}` : `without ${DISTRIBUTION}`;
  return `${use}Python ${facts.python} · ${has}`;
}

/** An interpreter's path as the picker shows it: inside a workspace folder relative to it (with
 * the folder's name when several are open), like the Python extension; any other as it is. */
export function interpreterLabel(path: string, folders: readonly { name: string; path: string }[]): string {
  const folder = folders.find((f) => interpreterScope(path, [f.path]) === "workspace");
  if (!folder) {
    return path;
  }
  const rel = path.slice(folder.path.replace(/[\\/]$/, "").length + 1);
  return folders.length > 1 ? `${folder.name}/${rel}` : `./${rel}`;
}

/** Where a chosen interpreter is saved: an interpreter inside a workspace folder (a project's
 * .venv) in the workspace's settings, like the Python extension; any other in the user's. */
export function interpreterScope(path: string, folderPaths: readonly string[]): "workspace" | "user" {
  const inside = folderPaths.some((folder) => {
    const base = folder.endsWith("/") || folder.endsWith("\\") ? folder : `${folder}/`;
    return path.startsWith(base) || path.startsWith(base.replace(/\/$/, "\\"));
  });
  return inside ? "workspace" : "user";
}

/** One line the server wrote to stderr (a JSON log line) as the output channel shows it. */
export interface LogLine {
  level: "trace" | "debug" | "info" | "warn" | "error";
  text: string;
}

const LOG_LEVELS: Record<string, LogLine["level"]> = {
  debug: "debug",
  info: "info",
  warning: "warn",
  error: "error",
  critical: "error",
};
const LOG_HEAD = new Set(["ts", "level", "logger", "msg", "exc"]);

export function logLine(line: string): LogLine {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { level: "info", text: line };
  }
  if (!record || typeof record !== "object" || typeof record.msg !== "string") {
    return { level: "info", text: line };
  }
  const fields = Object.entries(record)
    .filter(([key, value]) => !LOG_HEAD.has(key) && value !== "" && value != null)
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  const text = [record.msg, ...fields].join(" · ") + (typeof record.exc === "string" ? `\n${record.exc}` : "");
  return { level: LOG_LEVELS[String(record.level)] ?? "info", text };
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
    const items: MenuItem[] = [
      { label: "$(error) Infinite Context cannot start", detail: [problem.message, problem.hint].filter(Boolean).join(" "), command: "infiniteContext.showLogs" },
      { label: "$(symbol-misc) Select Interpreter…", description: `a Python with ${DISTRIBUTION}`, command: "infiniteContext.selectInterpreter" },
    ];
    if (problem.installable) {
      items.push({ label: "$(cloud-download) Install into this interpreter", description: `pip install ${DISTRIBUTION}`, command: "infiniteContext.installServer" });
    }
    items.push(
      { label: "$(gear) Open Settings", command: "infiniteContext.openSettings" },
      { label: "$(output) Show Logs", command: "infiniteContext.showLogs" },
      { label: "$(refresh) Restart Server", command: "infiniteContext.restartServer" },
    );
    return items;
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
  /** stopped with the Stop command: a choice, not a problem */
  stopped?: boolean;
  /** the hover, rendered by the server (Markdown) */
  tooltip?: string | null;
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

/** What a screen reader says for the live-proxy item. */
export function proxyAccessibleLabel(p: ProxyState): string {
  const head = "Infinite Context live endless mode";
  if (p.starting && !p.running) {
    return `${head}: starting the proxy`;
  }
  if (!p.running) {
    return p.problem ? `${head}: off, ${p.problem}` : `${head}: ${p.stopped ? "stopped" : "off"}`;
  }
  return p.savedShare == null
    ? `${head}: proxy running, nothing through it yet`
    : `${head}: ${Math.round(100 * p.savedShare)} percent of tool result tokens saved`;
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
