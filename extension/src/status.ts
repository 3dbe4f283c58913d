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

/** The status bar text: context use if a Claude Code session is live, else the memory budget. */
export function statusText(b: Budget | undefined): string {
  if (!b) {
    return "$(history) Infinite Context";
  }
  const version = b.version > 0 ? ` · v${b.version}` : " · no checkpoint";
  const refining = b.refining ? " $(sync~spin)" : "";
  if (b.contextTokens != null && b.contextWindow) {
    return `$(history) ${compact(b.contextTokens)}/${compact(b.contextWindow)}${version}${refining}`;
  }
  if (b.memoryTokens != null && b.memoryBudget) {
    return `$(history) mem ${compact(b.memoryTokens)}/${compact(b.memoryBudget)}${version}${refining}`;
  }
  return `$(history)${version}${refining}`;
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

/** Markdown for the status bar tooltip. */
export function tooltip(b: Budget | undefined, now: Date = new Date()): string {
  if (!b) {
    return "Infinite Context: starting the language server…";
  }
  const lines = ["**Infinite Context**", ""];
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
      : "- No checkpoint yet: click to make one",
  );
  if (b.refining) {
    lines.push(`- Refining with ${b.refining}`);
  }
  if (b.currentTask) {
    lines.push(`- Current task: ${b.currentTask}`);
  }
  if (b.store) {
    lines.push(`- Store: \`${b.store}\``);
  }
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
