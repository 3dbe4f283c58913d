// Real VS Code end to end: code-server + headless Chromium (playwright-core) drive the packaged
// extension in a two-folder workspace (alpha, and beta with a long name), as a person would:
//   0. a command run while the server starts waits for it (progress), then opens its document
//   1. the status item names the folder, follows the editor, has an accessible name; at 800 px
//      a long folder name is shortened and the figures stay
//   2. clicking it opens the menu; Checkpoint opens an editor tab; multi-line text with <T> is
//      saved with Ctrl+Enter into beta's brain (checked with the CLI: alpha's stays empty)
//   3. the tooltip (rendered by the server) shows <T> literally
//   4. Resume opens a read-only document; its Markdown preview shows <T>; closing asks nothing
//   5. History -> v1 -> Compare opens the diff editor on rendered Markdown (no JSON, no session id)
//   6. Rollback: the tooltip's version and time are the new version's, as History lists it
//   7. readable logs: the output channel shows log lines, not JSON
//   8. live endless mode (infiniteContext.endless.enabled): the server starts the per-user proxy
//      (temp data dir, free port, a fake upstream here); a new integrated terminal gets
//      ANTHROPIC_BASE_URL; one Claude Code-shaped request through it and the item beside the
//      budget shows the saving ($(zap) -NN%); Stop asks first (modal), then shows a plain "off"
//   9. Select Interpreter: the one in use listed and marked, candidates probed, an interpreter
//      without the package not saved, Browse opens in the workspace, a workspace .venv saved in
//      the workspace's settings (not the user's)
//  10. an interpreter that does not exist: one error, no install offered, two buttons at most;
//      one without the package (with pip): Install first
// Screenshots of each step go to e2e/screenshots/. Everything is written under one temp folder
// (HOME and XDG_* included: the terminal's history, Chromium's profile), removed at the end
// (IC_E2E_KEEP=1 keeps it); a last check confirms the real HOME was not written.
//
// Env: IC_PYTHON (interpreter with infinite-context installed; default ../.venv/bin/python).
import { spawn, execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, mkdirSync, writeFileSync, existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const python = process.env.IC_PYTHON || join(repo, ".venv", "bin", "python");
const vsix = join(repo, "extension", "infinite-context.vsix");
const codeServer = join(here, "node_modules", ".bin", "code-server");
const shots = join(here, "screenshots");
rmSync(shots, { recursive: true, force: true });
mkdirSync(shots, { recursive: true });

function fail(message) {
  console.error(`e2e: ${message}`);
  process.exitCode = 1;
  throw new Error(message);
}

function check(ok, message) {
  if (!ok) fail(message);
  console.log(`  ok: ${message}`);
}

async function freePort() {
  return await new Promise((ok) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

if (!existsSync(vsix)) fail(`no ${vsix}: run make extension first`);
const root = mkdtempSync(join(tmpdir(), "ic-e2e-"));
const alpha = join(root, "alpha");
// A long name: the status item must shorten it before its figures go (checked at 800 px).
const betaName = "beta-customer-analytics-platform-services";
const beta = join(root, betaName);
const userData = join(root, "user-data");
const extensions = join(root, "extensions");
const storeUrl = `sqlite:///${join(root, "brain.db")}`;
for (const [dir, file] of [[alpha, "alpha.py"], [beta, "beta.py"]]) {
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "src", file), "def main():\n    pass\n");
}
// A Messages API for the live proxy to forward to: records what reaches it, answers a short stream.
const upstreamBodies = [];
const upstream = createHttpServer((req, res) => {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => {
    upstreamBodies.push(Buffer.concat(parts));
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });
});
await new Promise((ok) => upstream.listen(0, "127.0.0.1", ok));
const upstreamUrl = `http://127.0.0.1:${upstream.address().port}`;
const proxyPort = await freePort();
const dataDir = join(root, "data");
const workspaceFile = join(root, "two.code-workspace");
writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: alpha }, { path: beta }] }));
const settingsFile = join(userData, "User", "settings.json");
mkdirSync(dirname(settingsFile), { recursive: true });
// The interpreter the editor starts with: the real one behind a wrapper that is slow while a
// marker file exists, so a command can be run while the server is still starting.
const slowMarker = join(root, "slow-start");
const slowPython = join(root, "bin", "slow-python");
mkdirSync(dirname(slowPython));
writeFileSync(slowPython, `#!/bin/sh\nif [ -f "${slowMarker}" ]; then sleep 12; fi\nexec "${python}" "$@"\n`);
chmodSync(slowPython, 0o755);
writeFileSync(slowMarker, "");
const settings = {
  "infiniteContext.interpreter": slowPython,
  "infiniteContext.storeUrl": storeUrl,
  "infiniteContext.endless.enabled": true,
  "infiniteContext.endless.port": proxyPort,
  "workbench.startupEditor": "none",
  "security.workspace.trust.enabled": false,
  "workbench.tips.enabled": false,
  "chat.commandCenter.enabled": false,
};
writeFileSync(settingsFile, JSON.stringify(settings));
// code-server's IPC sockets (vscode-ipc-*.sock, vscode-git-*.sock) go to TMPDIR: this run's own
// folder, removed at the end, not /tmp (they were left there after every run).
const ownTmp = join(root, "tmp");
mkdirSync(ownTmp);
// HOME and XDG_* in this run's folder: the integrated terminal's ~/.bash_history, Chromium's
// ~/.config/chromium and ~/.cache/dconf land there, not in the real HOME.
const home = join(root, "home");
mkdirSync(home);
const realHome = homedir();
const realHomeBefore = homeTraces();
const env = {
  ...process.env,
  HOME: home,
  TMPDIR: ownTmp,
  XDG_CONFIG_HOME: join(root, "xdg-config"),
  XDG_DATA_HOME: join(root, "xdg-data"),
  XDG_CACHE_HOME: join(root, "xdg-cache"),
  XDG_STATE_HOME: join(root, "xdg-state"),
  XDG_RUNTIME_DIR: join(root, "xdg-runtime"),
  // The proxy the editor starts: its own data dir, the fake upstream, an epoch on the first long request.
  INFINITE_CONTEXT_DATA_DIR: dataDir,
  INFINITE_CONTEXT_PROXY_UPSTREAM: upstreamUrl,
  INFINITE_CONTEXT_PROXY_EPOCH_TOKENS: "1000",
};
delete env.ANTHROPIC_BASE_URL;
mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });

/** What the e2e could leave in the real HOME: each path's modification time (or absent). */
function homeTraces() {
  const traces = {};
  for (const rel of [".bash_history", ".config/chromium", ".cache/dconf", ".config/code-server", ".local/share/code-server"]) {
    const path = join(realHome, rel);
    traces[rel] = existsSync(path) ? statSync(path).mtimeMs : null;
  }
  return traces;
}
execFileSync(codeServer, ["--extensions-dir", extensions, "--install-extension", vsix], { env, stdio: "inherit" });

/** The CLI's view of a folder's brain (same store as the editor). */
function brainStatus(folder) {
  const out = execFileSync(python, ["-m", "infinite_context_brain.server", "--json", "status", "--project", folder], {
    env: { ...env, INFINITE_CONTEXT_STORE_URL: storeUrl },
  });
  return JSON.parse(out.toString());
}

const port = await freePort();
const server = spawn(
  codeServer,
  [
    "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check",
    "--disable-workspace-trust", "--user-data-dir", userData, "--extensions-dir", extensions, workspaceFile,
  ],
  { env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
);
server.stdout.on("data", () => {});
server.stderr.on("data", () => {});
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  env,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let step = 0;
let page;
try {
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const shot = async (name) => {
    step += 1;
    const path = join(shots, `${String(step).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path });
    console.log(`  screenshot ${path}`);
  };
  const statusItem = (text) => page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: text }).first();
  const palette = async (command) => {
    // Enter only once the command is listed: early on, contributions may still be loading (and
    // an open palette does not refresh its list), so it is opened again until it is there.
    const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: command.split(": ").pop() }).first();
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press("F1");
      await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
      await page.keyboard.press("Control+a");
      await page.keyboard.type(`>${command}`);
      try {
        await row.waitFor({ timeout: 5000 });
        break;
      } catch (err) {
        if (attempt === 6) throw err;
        await page.keyboard.press("Escape");
        await page.waitForTimeout(1000);
      }
    }
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
  };
  const pickItem = async (text) => {
    const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: text }).first();
    await row.waitFor({ timeout: 15000 });
    await row.click();
  };
  const editorText = async () =>
    (await page.locator(".editor-instance .monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");

  const url = `http://127.0.0.1:${port}/?workspace=${encodeURIComponent(workspaceFile)}`;
  for (let i = 0; i < 60; i++) {
    try {
      await page.goto(url, { timeout: 5000 });
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  await page.waitForSelector(".monaco-workbench", { timeout: 60000 });

  const toasts = () => page.locator(".notification-toast");
  const hoverText = async (item, words) => {
    await page.mouse.move(700, 400);
    await page.waitForTimeout(300);
    await item.hover();
    const hover = page.locator(".monaco-hover, .workbench-hover").filter({ hasText: words }).first();
    await hover.waitFor({ timeout: 10000 });
    return (await hover.innerText()).replace(/\u00a0/g, " ");
  };
  const ariaLabel = async (item) => (await item.getAttribute("aria-label")) ?? "";
  const readJson = (file) => (existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {});
  const workspaceSettings = () => readJson(workspaceFile).settings ?? {};

  console.log("0. a command run while the server starts waits for it");
  await palette("Infinite Context: Show Status");
  const waiting = toasts().filter({ hasText: "waiting for the language server" }).first();
  await waiting.waitFor({ timeout: 15000 });
  await page.waitForTimeout(700); // the toast slides in
  await shot("command-during-start-up");
  await page.locator(".tabs-container .tab", { hasText: "Status (alpha).md" }).first().waitFor({ timeout: 60000 });
  await page.waitForTimeout(800);
  const statusDoc = await editorText();
  check(statusDoc.includes("No checkpoint yet") && !statusDoc.includes("Not available"), "the Status tab opened once the server ran, with its content");
  await waiting.waitFor({ state: "detached", timeout: 10000 });
  const startToasts = await toasts().allInnerTexts();
  check(!startToasts.some((t) => /try again|not running|Not available/i.test(t)), `no "try again" warning left (${startToasts.length} toast(s))`);
  await shot("status-after-start-up");
  rmSync(slowMarker);
  await palette("View: Close All Editors");

  console.log("1. two folders: the item names the folder, follows the editor, reads well aloud");
  // The language server's first budget notification adds "· no checkpoint" to the folder name.
  await statusItem("no checkpoint").waitFor({ timeout: 90000 });
  const first = (await statusItem("no checkpoint").innerText()).trim();
  check(first.includes("alpha"), `the item names alpha (the first folder) at start: "${first}"`);
  const firstLabel = await ariaLabel(statusItem("no checkpoint"));
  check(
    firstLabel === "Infinite Context, alpha: working memory 0 of 100k tokens, no checkpoint yet",
    `its accessible name is the figures in words: "${firstLabel}"`,
  );
  await shot("two-folders-alpha");
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
  await page.keyboard.press("Backspace");
  await page.keyboard.type("beta.py");
  await page.waitForTimeout(1000);
  await page.keyboard.press("Enter");
  await statusItem("beta").waitFor({ timeout: 15000 });
  const betaText = (await statusItem("beta").innerText()).trim();
  check(betaText.includes("beta-cu…") && !betaText.includes(betaName) && betaText.endsWith("mem 0/100k · no checkpoint"), `after opening beta.py the item reads "${betaText}" (name shortened)`);
  await shot("beta-active");
  await page.setViewportSize({ width: 800, height: 700 });
  await page.waitForTimeout(1000);
  const narrow = statusItem("beta");
  const box = await narrow.boundingBox();
  const narrowText = (await narrow.innerText()).trim();
  // VS Code cuts an item's label at 40% of the window: nothing of it may be cut off.
  const widths = await narrow.evaluate((item) => {
    const label = item.querySelector(".statusbar-item-label") ?? item;
    return [label.scrollWidth, label.clientWidth, item.scrollWidth, item.clientWidth];
  });
  const fits = widths[0] <= widths[1] && widths[2] <= widths[3];
  check(
    fits && box !== null && box.x + box.width <= 800 && narrowText.endsWith("mem 0/100k · no checkpoint"),
    `at 800 px the whole item shows: "${narrowText}" (label ${widths[0]} px of ${widths[1]} px)`,
  );
  await shot("long-name-at-800px");
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.waitForTimeout(500);

  console.log("2. the menu, then a multi-line checkpoint into beta");
  await statusItem("beta").click();
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "Rollback…" }).first().waitFor({ timeout: 10000 });
  await shot("menu");
  await pickItem("Checkpoint…");
  const tab = page.locator(".tabs-container .tab", { hasText: "Checkpoint beta" }).first();
  await tab.waitFor({ timeout: 15000 });
  await page.waitForTimeout(500);
  await page.keyboard.insertText("Current task: parse List<T> in src/beta.py\nDecided: keep <T> generic\nFiles: src/beta.py");
  await shot("checkpoint-editor");
  await page.keyboard.press("Control+Enter");
  await statusItem("v1").waitFor({ timeout: 30000 });
  check((await statusItem("v1").innerText()).includes("beta"), "the item reads beta · … · v1");
  await tab.waitFor({ state: "detached", timeout: 10000 });
  check(true, "the checkpoint tab closed after saving");
  const betaBrain = brainStatus(beta);
  const alphaBrain = brainStatus(alpha);
  const betaResume = execFileSync(python, ["-m", "infinite_context_brain.server", "resume", "--project", beta], {
    env: { ...env, INFINITE_CONTEXT_STORE_URL: storeUrl },
  }).toString();
  check(betaBrain.version === 1 && betaResume.includes("List<T>"), `beta's brain has v1 with the text (task: ${betaBrain.current_task})`);
  check(!alphaBrain.has_state, "alpha's brain is still empty");
  const saved = toasts().filter({ hasText: "Checkpoint v1 saved" }).first();
  const savedText = await saved.innerText();
  check(savedText.includes(`brain ${betaBrain.state_tokens.toLocaleString("en")} / ${betaBrain.token_cap.toLocaleString("en")} tokens`), `the toast gives the brain's size as status does: ${savedText.split("\n")[0]}`);
  await shot("after-checkpoint");

  console.log("3. the tooltip shows <T> literally");
  const tip = await hoverText(statusItem("v1"), "Current task");
  check(tip.includes("Current task: parse List<T> in src/beta.py"), `tooltip: ${tip.split("\n").find((l) => l.includes("Current task"))}`);
  check(tip.includes(`${betaBrain.state_tokens.toLocaleString("en")} / ${betaBrain.token_cap.toLocaleString("en")} tokens`) && !tip.includes("\\"), "the tooltip has the same brain size and no stray backslash");
  const v1Label = await ariaLabel(statusItem("v1"));
  check(!/\*\*|\\|\$\(/.test(v1Label) && v1Label.includes("checkpoint version 1"), `the accessible name has no Markdown: "${v1Label}"`);
  await shot("tooltip");
  await page.mouse.move(700, 400);

  console.log("4. Resume opens a read-only document; its preview keeps <T>");
  await palette("Infinite Context: Resume");
  await page.locator(".tabs-container .tab", { hasText: "Resume (beta" }).first().waitFor({ timeout: 15000 });
  await page.waitForTimeout(800);
  const resumeText = await editorText();
  check(resumeText.includes("List\\<T>"), "the Resume source escapes the tag-like <T> once (List\\<T>)");
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  await page.keyboard.type("x");
  await page.waitForTimeout(500);
  await shot("resume-read-only");
  check((await page.locator(".tabs-container .tab.dirty").count()) === 0, "no dirty editor after typing into Resume");
  await palette("Markdown: Open Preview to the Side");
  let previewText = "";
  for (let i = 0; i < 40 && !previewText.includes("Task:"); i++) {
    await page.waitForTimeout(500);
    for (const frame of page.frames()) {
      const text = await frame.evaluate(() => document.body?.innerText ?? "").catch(() => "");
      if (text.includes("Project context")) previewText = text;
    }
  }
  check(previewText.includes("parse List<T> in src/beta.py") && previewText.includes("keep <T> generic"), "the Markdown preview shows List<T> and <T>");
  check(!previewText.includes("\\<"), "the preview shows no backslash");
  await shot("resume-preview");
  await palette("View: Close All Editors");
  await page.waitForTimeout(800);
  check((await page.locator(".monaco-dialog-box").count()) === 0, "closing Resume and its preview asks nothing (no save prompt)");

  console.log("5. a second checkpoint, then History -> v1 -> Compare opens the diff editor");
  await palette("Infinite Context: Checkpoint");
  await tab.waitFor({ timeout: 15000 });
  await page.waitForTimeout(500);
  await page.keyboard.insertText("Done: the parser.\nCurrent task: tests for Map<K, V>");
  await page.keyboard.press("Control+Enter");
  await statusItem("v2").waitFor({ timeout: 30000 });
  await palette("Infinite Context: Show History");
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "v2 (current)" }).first().waitFor({ timeout: 15000 });
  await shot("history");
  await pickItem("parse List<T>");
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "Compare v1" }).first().waitFor({ timeout: 10000 });
  await shot("history-actions");
  await pickItem("Compare v1");
  const diff = page.locator(".monaco-diff-editor").first();
  await diff.waitFor({ timeout: 15000 });
  await page.waitForTimeout(1000);
  const diffText = (await diff.innerText()).replace(/\u00a0/g, " "); // Monaco renders spaces as nbsp
  check(diffText.includes("Map\\<K, V>") && diffText.includes("List\\<T>"), "the diff editor shows both versions' Markdown");
  check(!diffText.includes("session_id") && !diffText.includes('"active_context"'), "rendered Markdown, not state JSON");
  await shot("history-diff");
  await palette("View: Close All Editors");
  await page.waitForTimeout(500);
  check((await page.locator(".monaco-dialog-box").count()) === 0, "closing the diff asks nothing");
  await palette("Notifications: Clear All Notifications");

  console.log("6. Rollback: the tooltip's version and time are the new version's");
  await page.waitForTimeout(61_000 - (Date.now() % 60_000)); // v3 is written in a later minute than v1
  await palette("Infinite Context: Rollback");
  await pickItem("parse List<T>");
  const restore = page.locator(".monaco-dialog-box .monaco-button", { hasText: "Restore" }).first();
  await restore.waitFor({ timeout: 10000 });
  await restore.click();
  await statusItem("v3").waitFor({ timeout: 30000 });
  await palette("View: Close All Editors");
  await palette("Infinite Context: Show History");
  const v3Row = page.locator(".quick-input-widget .monaco-list-row", { hasText: "v3 (current)" }).first();
  await v3Row.waitFor({ timeout: 15000 });
  const rows = await page.locator(".quick-input-widget .monaco-list-rows").first().innerText();
  await shot("history-after-rollback");
  const times = [...rows.matchAll(/(\d{4}-\d\d-\d\d \d\d:\d\d UTC)/g)].map((m) => m[1]);
  await page.keyboard.press("Escape");
  const rolledTip = await hoverText(statusItem("v3"), "Brain v3");
  const tipLine = rolledTip.split("\n").find((l) => l.includes("Brain v3")) ?? "";
  check(times.length === 3 && tipLine.includes(`saved ${times[0]}`) && times[0] !== times[2], `tooltip "${tipLine}" has v3's own time (history: ${times.join(", ")})`);
  check(tipLine.includes("merged by rollback:v1"), "and says it restored v1");
  await shot("tooltip-after-rollback");
  await page.mouse.move(700, 400);

  console.log("7. the output channel shows readable log lines");
  await palette("Infinite Context: Show Logs");
  const outputView = page.locator(".panel .monaco-editor .view-lines").first();
  await outputView.waitFor({ timeout: 15000 });
  await page.waitForTimeout(1000);
  const logText = (await outputView.innerText()).replace(/\u00a0/g, " ");
  check(/\[info\] session opened · folder=/.test(logText) && !logText.includes('{"ts"'), `log lines, not JSON: ${logText.split("\n").find((l) => l.includes("session opened"))}`);
  await shot("logs");
  await palette("View: Toggle Panel Visibility");

  console.log("8. live endless mode: the proxy starts, terminals go through it, the item shows the saving");
  const zap = page.locator("#workbench\\.parts\\.statusbar .statusbar-item:has(.codicon-zap)").first();
  await zap.waitFor({ timeout: 30000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll("#workbench\\.parts\\.statusbar .statusbar-item")].some((e) => e.querySelector(".codicon-zap") && e.textContent.includes("live")),
    null,
    { timeout: 30000 },
  );
  check(true, `the item beside the budget reads "${(await zap.innerText()).trim()}" (proxy up, nothing through it yet)`);
  const proxyUrl = `http://127.0.0.1:${proxyPort}`;
  const envFile = join(root, "terminal-env.txt");
  await palette("Terminal: Create New Terminal");
  // Multi-root with no editor open: VS Code asks which folder the terminal starts in.
  const cwdPick = page.locator(".quick-input-widget input[placeholder*='working directory']");
  await cwdPick.waitFor({ timeout: 3000 }).then(() => page.keyboard.press("Enter")).catch(() => undefined);
  await page.locator(".terminal-wrapper.active, .xterm").first().waitFor({ timeout: 20000 });
  await page.waitForTimeout(1500);
  await page.keyboard.type(`echo "$ANTHROPIC_BASE_URL" > ${envFile}; history -a\n`);
  for (let i = 0; i < 50 && !existsSync(envFile); i++) await page.waitForTimeout(200);
  const terminalUrl = existsSync(envFile) ? readFileSync(envFile, "utf8").trim() : "(no file)";
  check(terminalUrl === proxyUrl, `a new integrated terminal has ANTHROPIC_BASE_URL=${terminalUrl}`);
  await palette("View: Toggle Panel Visibility");
  // One request as Claude Code sends it: six old Bash results, long listings.
  const messages = [{ role: "user", content: "list the modules" }];
  for (let i = 0; i < 6; i++) {
    messages.push({ role: "assistant", content: [{ type: "tool_use", id: `toolu_e2e${i}`, name: "Bash", input: { command: "ls" } }] });
    const out = Array.from({ length: 300 }, (_, n) => `src/module_${i}_${n}.py`).join("\n");
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_e2e${i}`, content: out }] });
  }
  const sent = JSON.stringify({ model: "m", messages, stream: true });
  const reply = await fetch(`${proxyUrl}/v1/messages`, { method: "POST", body: sent, headers: { "content-type": "application/json" } });
  await reply.text();
  check(reply.ok && upstreamBodies.length === 1 && upstreamBodies[0].length < sent.length / 2,
    `the upstream got ${upstreamBodies[0]?.length} bytes for ${sent.length} sent`);
  await page.waitForFunction(
    () => [...document.querySelectorAll("#workbench\\.parts\\.statusbar .statusbar-item")].some((e) => e.querySelector(".codicon-zap") && /-\d+%/.test(e.textContent)),
    null,
    { timeout: 15000 },
  );
  const saving = (await zap.innerText()).trim();
  check(/^-\d+%$/.test(saving) && Number(saving.slice(1, -1)) >= 50, `the item shows the live saving: "${saving}"`);
  const zapLabel = await ariaLabel(zap);
  check(zapLabel === `Infinite Context live endless mode: ${saving.slice(1, -1)} percent of tool result tokens saved`, `its accessible name: "${zapLabel}"`);
  await palette("Notifications: Clear All Notifications");
  await page.waitForTimeout(500);
  const proxyTip = await hoverText(zap, "Last request");
  check(proxyTip.includes("tokens saved") && proxyTip.includes(proxyUrl), `tooltip: ${proxyTip.split("\n").find((l) => l.includes("tokens saved"))}`);
  await shot("live-saving");
  await page.mouse.move(700, 400);
  await zap.click();
  await pickItem("Stop Live Proxy");
  const confirm = page.locator(".monaco-dialog-box", { hasText: "Stop the live proxy?" }).first();
  await confirm.waitFor({ timeout: 10000 });
  check((await confirm.innerText()).includes("cannot reach the API"), "Stop asks first, in a modal dialog that says what stops working");
  await shot("live-proxy-stop-confirmation");
  await confirm.locator(".monaco-button", { hasText: "Stop Proxy" }).first().click();
  await page.waitForFunction(
    () => [...document.querySelectorAll("#workbench\\.parts\\.statusbar .statusbar-item")].some((e) => e.querySelector(".codicon-zap") && e.textContent.includes("off")),
    null,
    { timeout: 15000 },
  );
  check(!existsSync(join(dataDir, "proxy", "proxy.json")), `Stop Live Proxy stopped it; the item reads "${(await zap.innerText()).trim()}"`);
  await page.waitForTimeout(2500); // a status poll later: still a plain state
  const stoppedClass = (await zap.getAttribute("class")) ?? "";
  check(!stoppedClass.includes("warning-kind") && !(await zap.innerHTML()).includes("codicon-warning"), "stopped on purpose is not a warning");
  check((await ariaLabel(zap)).endsWith(": stopped"), `accessible name: "${await ariaLabel(zap)}"`);
  await shot("live-proxy-stopped");
  await palette("Notifications: Clear All Notifications");

  console.log("9. Select Interpreter: like the Python extension's picker");
  // alpha's .venv has pip but not the package; beta's .venv is the interpreter with the package.
  const alphaVenv = join(alpha, ".venv");
  execFileSync("python3", ["-m", "venv", alphaVenv]);
  const alphaPython = join(alphaVenv, "bin", "python");
  const betaPython = join(beta, ".venv", "bin", "python");
  mkdirSync(dirname(betaPython), { recursive: true });
  writeFileSync(betaPython, `#!/bin/sh\nexec "${python}" "$@"\n`);
  chmodSync(betaPython, 0o755);
  await palette("Infinite Context: Select Interpreter");
  const inUse = page.locator(".quick-input-widget .monaco-list-row", { hasText: "in use" }).first();
  await inUse.waitFor({ timeout: 30000 });
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "without infinite-context-brain" }).first().waitFor({ timeout: 30000 });
  const picker = await page.locator(".quick-input-widget .monaco-list-rows").first().innerText();
  await shot("select-interpreter");
  check((await inUse.innerText()).includes(slowPython) && (await inUse.innerText()).includes("in use · Python 3."), "the interpreter in use is listed first and marked, with its version");
  check(picker.includes("alpha/.venv/bin/python") && picker.includes(`${betaName}/.venv/bin/python`), "each folder's .venv is offered, by its folder");
  await pickItem("alpha/.venv/bin/python");
  const refused = toasts().filter({ hasText: "not selected" }).first();
  await refused.waitFor({ timeout: 30000 });
  const refusedText = await refused.innerText();
  check(refusedText.includes("does not have infinite-context-brain installed") && refusedText.includes("Install infinite-context-brain into It"), `an interpreter without the package is not saved: ${refusedText.split("\n").find((l) => l.includes("not selected"))}`);
  check(readJson(settingsFile)["infiniteContext.interpreter"] === slowPython && !("infiniteContext.interpreter" in workspaceSettings()), "nothing was saved");
  await page.waitForTimeout(1000); // the "checking" progress fades out
  await shot("interpreter-not-selected");
  await palette("Notifications: Clear All Notifications");
  await palette("Infinite Context: Select Interpreter");
  await pickItem("Browse…");
  const dialogInput = page.locator(".quick-input-widget input").first();
  await page.waitForTimeout(1500);
  const browsePath = await dialogInput.inputValue();
  check(browsePath.startsWith(beta) || browsePath.startsWith(alpha), `Browse opens in the workspace: "${browsePath}"`);
  await shot("interpreter-browse");
  await page.keyboard.press("Escape");
  await page.waitForTimeout(500);
  await palette("Infinite Context: Select Interpreter");
  await pickItem(`${betaName}/.venv/bin/python`);
  for (let i = 0; i < 60 && workspaceSettings()["infiniteContext.interpreter"] !== betaPython; i++) await page.waitForTimeout(250);
  check(workspaceSettings()["infiniteContext.interpreter"] === betaPython, "a workspace .venv is saved in the workspace's settings");
  check(readJson(settingsFile)["infiniteContext.interpreter"] === slowPython, "and not in the user's settings");
  await statusItem("v3").waitFor({ timeout: 60000 });
  check(true, "the server restarted on it");

  console.log("10. an interpreter that cannot work: one message, only the fixes that can work");
  const writeWorkspaceInterpreter = (path) => {
    const workspace = readJson(workspaceFile);
    workspace.settings = { ...(workspace.settings ?? {}), "infiniteContext.interpreter": path };
    writeFileSync(workspaceFile, JSON.stringify(workspace, null, 2));
  };
  writeWorkspaceInterpreter(join(root, "nowhere", "bin", "python3"));
  const missingToast = toasts().filter({ hasText: "Infinite Context cannot start" }).first();
  await missingToast.waitFor({ timeout: 60000 });
  await page.waitForTimeout(1500);
  const missingText = await missingToast.innerText();
  const missingButtons = await missingToast.locator(".monaco-button").allInnerTexts();
  check(missingText.includes("was not found"), `the message names the cause: ${missingText.split("\n").find((l) => l.includes("cannot start"))}`);
  check(missingButtons.length <= 2 && !missingButtons.some((b) => /Install/.test(b)), `no install offered for it; buttons: ${missingButtons.join(", ")}`);
  const shown = await toasts().allInnerTexts();
  check(shown.filter((t) => /Infinite Context|infinite-context|language server/i.test(t)).length === 1, `one message, not five (${shown.length} toast(s))`);
  check(!shown.some((t) => t.includes("exit undefined")), "no \"exit undefined\"");
  const errorItem = page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: "Infinite Context" }).first();
  await shot("error-missing-interpreter");
  await errorItem.click();
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "Select Interpreter" }).first().waitFor({ timeout: 10000 });
  const menu = await page.locator(".quick-input-widget .monaco-list-rows").first().innerText();
  check(["Open Settings", "Show Logs", "Restart Server"].every((a) => menu.includes(a)) && !menu.includes("Install into this interpreter"), "the menu offers the other remedies, not an install");
  await shot("error-menu");
  await page.keyboard.press("Escape");
  await palette("Notifications: Clear All Notifications");
  writeWorkspaceInterpreter(alphaPython);
  const installToast = toasts().filter({ hasText: "does not have infinite-context-brain installed" }).first();
  await installToast.waitFor({ timeout: 60000 });
  await page.waitForTimeout(1000);
  const installButtons = await installToast.locator(".monaco-button").allInnerTexts();
  check(installButtons.join(",") === "Install into this interpreter,Select Interpreter", `with pip, installing is the first fix: ${installButtons.join(", ")}`);
  await shot("error-not-installed");
  const ownHistory = join(home, ".bash_history");
  check(existsSync(ownHistory) && readFileSync(ownHistory, "utf8").includes(envFile), "the terminal's history went to this run's HOME");
  console.log("e2e: OK");
} catch (err) {
  // What the screen showed when it failed.
  await page?.screenshot({ path: join(shots, "failure.png") }).catch(() => undefined);
  throw err;
} finally {
  await browser.close();
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {
    // already gone
  }
  upstream.close();
  try {
    // The proxy is detached (one per user, it outlives the editor): stop it by its pid file.
    execFileSync(python, ["-m", "infinite_context_brain.server", "proxy", "stop"], { env, stdio: "ignore" });
  } catch {
    // not running
  }
  if (!process.env.IC_E2E_KEEP) {
    await new Promise((r) => setTimeout(r, 500));
    rmSync(root, { recursive: true, force: true });
  }
}
const realHomeAfter = homeTraces();
const touched = Object.keys(realHomeAfter).filter((rel) => realHomeAfter[rel] !== realHomeBefore[rel]);
check(touched.length === 0, `the real HOME (${realHome}) is untouched${touched.length ? `: ${touched.join(", ")} changed` : ""}`);
