import { strict as assert } from "node:assert";
import { test } from "node:test";

import {
  age,
  Budget,
  checkpointTemplate,
  checkpointText,
  compact,
  errorTooltip,
  escapeMarkdown,
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
} from "../status";

const base: Budget = { folderUri: "file:///p", version: 7, contextTokens: 142_000, contextWindow: 200_000 };

test("compact numbers", () => {
  assert.equal(compact(900), "900");
  assert.equal(compact(142_000), "142k");
  assert.equal(compact(1_000_000), "1M");
  assert.equal(compact(1_500_000), "1.5M");
});

test("status text prefers the live context, then the memory budget", () => {
  assert.equal(statusText(base), "$(history) 142k/200k · v7");
  assert.equal(
    statusText({ folderUri: "f", version: 0, memoryTokens: 3000, memoryBudget: 80_000 }),
    "$(history) mem 3k/80k · no checkpoint",
  );
  assert.equal(statusText({ ...base, refining: "gemini:x" }), "$(history) 142k/200k · v7 $(sync~spin)");
  assert.equal(statusText(undefined), "$(history) Infinite Context");
});

test("thresholds: warning at 75%, error at 90%", () => {
  assert.equal(level({ ...base, contextTokens: 149_999 }), "normal");
  assert.equal(level({ ...base, contextTokens: 150_000 }), "warning");
  assert.equal(level({ ...base, contextTokens: 180_000 }), "error");
  assert.equal(level({ folderUri: "f", version: 1 }), "normal");
});

test("tooltip says what a person needs", () => {
  const now = new Date("2026-01-01T12:00:00Z");
  const text = tooltip(
    { ...base, lastCheckpoint: "2026-01-01T11:50:00Z", mergedBy: "offline", store: "sqlite:///b.db", memoryTokens: 10, memoryBudget: 80_000 },
    now,
  );
  assert.match(text, /142,000 \/ 200,000 tokens \(71%\)/);
  assert.match(text, /v7, 10 min ago, merged by offline/);
  assert.match(text, /Working memory: 10 \/ 80,000/);
  assert.equal(age(null), "never");
});

test("rollback quick pick items", () => {
  const items = historyItems(
    [
      { version: 3, timestamp: "2026-01-01T10:00:00+00:00", merged_by: "offline", first_line: "logout" },
      { version: 2, timestamp: "2026-01-01T09:00:00+00:00", merged_by: "gemini:x", first_line: "" },
    ],
    3,
  );
  assert.deepEqual(
    items.map((i) => [i.label, i.description, i.detail, i.version]),
    [
      ["v3 (current)", "2026-01-01 10:00 · offline", "logout", 3],
      ["v2", "2026-01-01 09:00 · gemini:x", "(no task)", 2],
    ],
  );
});

test("multi-root: the item names the folder", () => {
  assert.equal(statusText(base, "beta"), "$(history) beta · 142k/200k · v7");
  assert.equal(statusText({ folderUri: "f", version: 0 }, "beta"), "$(history) beta · no checkpoint");
  assert.equal(statusText(undefined, "beta"), "$(history) beta");
  assert.equal(statusText(undefined, "$(bug)x"), "$(history) $\u200b(bug)x"); // a folder name is not an icon
  assert.match(tooltip(base, new Date(), "be_ta"), /\*\*Infinite Context\*\* · be\\_ta/);
});

test("user text is escaped in Markdown: <T> stays literal", () => {
  assert.equal(escapeMarkdown("List<T> & *x*"), "List\\<T\\> \\& \\*x\\*");
  const tip = tooltip({ ...base, currentTask: "fix List<T>" });
  assert.match(tip, /Current task: fix List\\<T\\>/);
  assert.ok(!tip.includes("List<T>"));
});

test("start problems name the cause", () => {
  assert.equal(startProblem("/x/python", "ENOENT", "").kind, "no-interpreter");
  const missing = startProblem("/usr/bin/python3", 1, "Traceback...\n/usr/bin/python3: No module named infinite_context_brain\n");
  assert.equal(missing.kind, "not-installed");
  assert.match(missing.message, /\/usr\/bin\/python3 does not have infinite-context installed/);
  assert.match(startProblem("p", 1, "boom\nValueError: bad\n").message, /ValueError: bad/);
  assert.match(errorTooltip(missing), /Select Interpreter/);
});

test("menu: actions when running, remedies when the server cannot start", () => {
  const running = menuItems(true, undefined, "beta", true).map((i) => i.command);
  assert.deepEqual(running.slice(0, 4), [
    "infiniteContext.checkpoint",
    "infiniteContext.resume",
    "infiniteContext.showHistory",
    "infiniteContext.rollback",
  ]);
  assert.ok(running.includes("infiniteContext.selectFolder") && running.includes("infiniteContext.openSettings"));
  assert.ok(!menuItems(true, undefined, "a", false).some((i) => i.command === "infiniteContext.selectFolder"));
  const broken = menuItems(false, { kind: "not-installed", message: "m" }).map((i) => i.command);
  for (const command of ["selectInterpreter", "installServer", "openSettings", "showLogs"]) {
    assert.ok(broken.includes(`infiniteContext.${command}`), command);
  }
});

test("checkpoint editor keeps line breaks and drops only its instructions", () => {
  const draft = "Done: parser for List<T>\n\nCurrent task: tests\n  - indented line";
  const text = checkpointTemplate("beta", draft);
  assert.ok(text.startsWith("<!-- Checkpoint for \"beta\""));
  assert.equal(checkpointText(text), draft);
  assert.equal(checkpointText(checkpointTemplate("beta", "")), "");
  assert.equal(checkpointText("no header\nline 2"), "no header\nline 2");
});

const live: ProxyState = {
  enabled: true,
  running: true,
  url: "http://127.0.0.1:8419",
  pid: 42,
  upstream: "https://api.anthropic.com",
  requests: 3,
  transformed: 2,
  epochs: 1,
  tokensBefore: 40_000,
  tokensAfter: 8_800,
  savedTokens: 31_200,
  savedShare: 0.78,
  lastBefore: 24_000,
  lastAfter: 3_000,
  lastSavedTokens: 21_000,
  lastSavedShare: 0.875,
  lastOverheadMs: 4.2,
  problem: null,
  fix: null,
  log: "/data/proxy/proxy.log",
  terminalEnv: { ANTHROPIC_BASE_URL: "http://127.0.0.1:8419" },
};
const idle: ProxyState = { ...live, running: false, url: null, pid: null, requests: 0, transformed: 0, tokensBefore: 0, tokensAfter: 0, savedTokens: 0, savedShare: null, lastBefore: 0, lastAfter: 0, lastSavedTokens: 0, lastSavedShare: null, terminalEnv: {} };

test("the live saving beside the budget: share saved, live, off, hidden", () => {
  assert.equal(proxyText(live), "$(zap) -78%");
  assert.equal(proxyText({ ...live, savedShare: null, transformed: 0 }), "$(zap) live");
  assert.equal(proxyText({ ...idle, problem: "the live proxy is not running" }), "$(zap) $(warning) off");
  assert.equal(proxyText({ ...idle, enabled: false }), undefined); // setting off, nothing running
  assert.equal(proxyText({ ...live, enabled: false }), "$(zap) -78%"); // started elsewhere (Claude Code)
  assert.equal(proxyText(undefined), undefined);
  assert.equal(proxyText({ ...idle, starting: true }), "$(zap) $(sync~spin)");
  // An invalid setting turns it off, and still shows why.
  const invalid = { ...idle, enabled: false, startFailed: true, problem: "infiniteContext.endless.port: must be a port number" };
  assert.equal(proxyText(invalid), "$(zap) $(warning) off");
  assert.equal(proxyLevel(invalid), "warning");
  assert.match(proxyTooltip({ ...idle, starting: true }), /Starting the live proxy/);
});

test("a proxy that should run and does not is a warning", () => {
  assert.equal(proxyLevel(live), "normal");
  assert.equal(proxyLevel({ ...idle, problem: "the proxy exited at start (code 1)" }), "warning");
  assert.equal(proxyLevel({ ...idle, enabled: false, problem: null }), "normal");
});

test("the tooltip gives the figures, the terminals' routing and the fix", () => {
  const tip = proxyTooltip(live);
  assert.match(tip, /Last request: tool results 24,000 → 3,000 tokens \(-88%\)/);
  assert.match(tip, /In total: 31,200 tokens saved, 40,000 → 8,800 \(-78%\)/);
  assert.match(tip, /2 of 3 requests transformed, 1 epoch\(s\), last overhead 4.2 ms/);
  assert.match(tip, /New integrated terminals: Claude Code goes through it/);
  assert.match(proxyTooltip({ ...live, transformed: 0 }), /No request through it yet/);
  const failed = proxyTooltip({ ...idle, problem: "the proxy exited at start (code 1)", fix: "set infiniteContext.endless.port" });
  assert.match(failed, /\$\(warning\) the proxy exited at start \\\(code 1\\\)/); // escaped Markdown
  assert.doesNotMatch(failed, /- The live proxy is not running/); // said once, by the problem
  assert.match(proxyTooltip(idle), /- The live proxy is not running/);
  assert.match(failed, /Fix: set infiniteContext\\\.endless\\\.port/);
  assert.match(failed, /Click to start the proxy/);
});

test("the proxy menu offers stop while it runs, start when it does not", () => {
  assert.deepEqual(proxyMenuItems(live).map((i) => i.command), ["infiniteContext.stopProxy", "infiniteContext.openProxyLog", "infiniteContext.openEndlessSettings"]);
  assert.equal(proxyMenuItems(idle)[0].command, "infiniteContext.startProxy");
  assert.equal(proxyMenuItems(undefined).length, 2);
});
