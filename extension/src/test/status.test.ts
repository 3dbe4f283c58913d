import { strict as assert } from "node:assert";
import { test } from "node:test";

import {
  accessibleLabel,
  Budget,
  checkpointTemplate,
  checkpointText,
  compact,
  DISTRIBUTION,
  errorTooltip,
  historyItems,
  interpreterDescription,
  interpreterFacts,
  interpreterLabel,
  interpreterScope,
  level,
  logLine,
  menuItems,
  NAME_LIMIT,
  problemActions,
  ProxyState,
  proxyAccessibleLabel,
  proxyLevel,
  proxyMenuItems,
  proxyText,
  shortName,
  shownTime,
  startProblem,
  statusText,
  withInstallFacts,
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

test("the accessible name reads the figures, never Markdown or icons", () => {
  assert.equal(accessibleLabel(base), "Infinite Context: context 142k of 200k tokens, 71 percent, checkpoint version 7");
  assert.equal(
    accessibleLabel({ folderUri: "f", version: 0, memoryTokens: 3000, memoryBudget: 80_000 }, "beta"),
    "Infinite Context, beta: working memory 3k of 80k tokens, no checkpoint yet",
  );
  assert.equal(accessibleLabel(undefined), "Infinite Context: starting the language server");
  for (const label of [accessibleLabel({ ...base, refining: "gemini:x", tooltip: "**x**" }, "a_b")]) {
    assert.doesNotMatch(label, /\*\*|\$\(|\\/);
  }
});

test("times are written as every surface writes them", () => {
  assert.equal(shownTime("2026-01-01T10:00:59.123456+00:00"), "2026-01-01 10:00 UTC");
  assert.equal(shownTime("2026-01-01T11:00:00+01:00"), "2026-01-01 10:00 UTC");
  assert.equal(shownTime(null), "never");
});

test("a long folder name is shortened before the figures go", () => {
  const long = "customer-analytics-platform-backend-services";
  const text = statusText({ ...base, version: 12 }, long);
  assert.ok(text.endsWith(" · 142k/200k · v12"), text);
  assert.ok([...shortName(long)].length === NAME_LIMIT && shortName(long).includes("…"), shortName(long));
  assert.equal(shortName(long), "custome…rvices");
  assert.equal(shortName("beta"), "beta");
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
      ["v3 (current)", "2026-01-01 10:00 UTC · offline", "logout", 3],
      ["v2", "2026-01-01 09:00 UTC · gemini:x", "(no task)", 2],
    ],
  );
});

test("multi-root: the item names the folder", () => {
  assert.equal(statusText(base, "beta"), "$(history) beta · 142k/200k · v7");
  assert.equal(statusText({ folderUri: "f", version: 0 }, "beta"), "$(history) beta · no checkpoint");
  assert.equal(statusText(undefined, "beta"), "$(history) beta");
  assert.equal(statusText(undefined, "$(bug)x"), "$(history) $\u200b(bug)x"); // a folder name is not an icon
});

test("start problems name the cause", () => {
  assert.equal(startProblem("/x/python", "ENOENT", "").kind, "no-interpreter");
  const missing = startProblem("/usr/bin/python3", 1, "Traceback...\n/usr/bin/python3: No module named infinite_context_brain\n");
  assert.equal(missing.kind, "not-installed");
  assert.match(missing.message, new RegExp(`/usr/bin/python3 does not have ${DISTRIBUTION} installed`));
  assert.match(startProblem("p", 1, "boom\nValueError: bad\n").message, /ValueError: bad/);
});

const facts = { python: "3.11.7", server: null, pip: true, managed: false, venv: true };

test("only fixes that can work are offered, at most two in the toast", () => {
  const gone = startProblem("/nowhere/python", "ENOENT", "");
  const missing = startProblem("/p/.venv/bin/python", 1, "No module named 'infinite_context_brain'");
  const installable = withInstallFacts(missing, facts);
  const noPip = withInstallFacts(missing, { ...facts, pip: false });
  const system = withInstallFacts(missing, { ...facts, venv: false, managed: true });
  assert.equal(installable.installable, true);
  assert.ok(!noPip.installable && /no pip/.test(noPip.hint ?? ""));
  assert.ok(!system.installable && /virtual environment/.test(system.hint ?? ""));
  assert.equal(withInstallFacts(gone, facts), gone); // only a missing package is installable
  for (const p of [gone, noPip, system, installable]) {
    const install = menuItems(false, p).some((i) => i.command === "infiniteContext.installServer");
    assert.equal(install, p === installable, p.message);
    assert.ok(problemActions(p).length <= 2);
    assert.equal(problemActions(p).includes("Install into this interpreter"), p === installable);
    assert.equal(errorTooltip(p).includes("Install into this interpreter"), p === installable);
    assert.doesNotMatch(errorTooltip(p), /\*\*|\\/); // plain text
  }
  assert.deepEqual(problemActions(installable), ["Install into this interpreter", "Select Interpreter"]);
  assert.match(errorTooltip(noPip), /It has no pip/);
  const broken = menuItems(false, installable).map((i) => i.command);
  for (const command of ["selectInterpreter", "installServer", "openSettings", "showLogs", "restartServer"]) {
    assert.ok(broken.includes(`infiniteContext.${command}`), command);
  }
});

test("the interpreter picker's facts and where a choice is saved", () => {
  assert.deepEqual(interpreterFacts('noise\n{"python": "3.12.1", "server": "0.1.0", "pip": true, "managed": false, "venv": true}\n'), {
    python: "3.12.1",
    server: "0.1.0",
    pip: true,
    managed: false,
    venv: true,
  });
  assert.equal(interpreterFacts("Traceback"), undefined);
  assert.equal(interpreterDescription({ ...facts, server: "0.1.0" }, true), `in use · Python 3.11.7 · ${DISTRIBUTION} 0.1.0`);
  assert.equal(interpreterDescription(facts, false), `Python 3.11.7 · without ${DISTRIBUTION}`);
  assert.equal(interpreterDescription(undefined, false), "does not run");
  assert.equal(interpreterScope("/w/alpha/.venv/bin/python", ["/w/alpha", "/w/beta"]), "workspace");
  assert.equal(interpreterScope("/w/alphabet/.venv/bin/python", ["/w/alpha"]), "user");
  assert.equal(interpreterScope("/usr/bin/python3", ["/w/alpha"]), "user");
  assert.equal(interpreterScope("python3", ["/w/alpha"]), "user");
  assert.equal(interpreterScope("C:\\w\\a\\.venv\\Scripts\\python.exe", ["C:\\w\\a"]), "workspace");
  const two = [{ name: "alpha", path: "/w/alpha" }, { name: "beta", path: "/w/beta/" }];
  assert.equal(interpreterLabel("/w/beta/.venv/bin/python", two), "beta/.venv/bin/python");
  assert.equal(interpreterLabel("/w/alpha/.venv/bin/python", two.slice(0, 1)), "./.venv/bin/python");
  assert.equal(interpreterLabel("/usr/bin/python3", two), "/usr/bin/python3");
});

test("the server's JSON log lines become readable lines with their level", () => {
  const line = JSON.stringify({ ts: "2026-01-01T10:00:00.000+00:00", level: "warning", logger: "x.lsp", msg: "budget not available", folder: "/w/a", fix: "start redis" });
  assert.deepEqual(logLine(line), { level: "warn", text: "budget not available · folder=/w/a · fix=start redis" });
  assert.deepEqual(logLine(JSON.stringify({ level: "error", msg: "boom", exc: "Traceback\nValueError" })), { level: "error", text: "boom\nTraceback\nValueError" });
  assert.deepEqual(logLine("plain text from a library"), { level: "info", text: "plain text from a library" });
  assert.deepEqual(logLine('{"not": "a log"}'), { level: "info", text: '{"not": "a log"}' });
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
});

test("a proxy that should run and does not is a warning; one stopped on purpose is not", () => {
  assert.equal(proxyLevel(live), "normal");
  assert.equal(proxyLevel({ ...idle, stopped: true, problem: null }), "normal");
  assert.equal(proxyText({ ...idle, stopped: true, problem: null }), "$(zap) off");
  assert.equal(proxyLevel({ ...idle, problem: "the proxy exited at start (code 1)" }), "warning");
  assert.equal(proxyLevel({ ...idle, enabled: false, problem: null }), "normal");
});

test("the proxy item's accessible name", () => {
  assert.equal(proxyAccessibleLabel(live), "Infinite Context live endless mode: 78 percent of tool result tokens saved");
  assert.equal(proxyAccessibleLabel({ ...idle, stopped: true }), "Infinite Context live endless mode: stopped");
  assert.equal(proxyAccessibleLabel({ ...idle, problem: "port taken" }), "Infinite Context live endless mode: off, port taken");
});

test("the proxy menu offers stop while it runs, start when it does not", () => {
  assert.deepEqual(proxyMenuItems(live).map((i) => i.command), ["infiniteContext.stopProxy", "infiniteContext.openProxyLog", "infiniteContext.openEndlessSettings"]);
  assert.equal(proxyMenuItems(idle)[0].command, "infiniteContext.startProxy");
  assert.equal(proxyMenuItems(undefined).length, 2);
});
