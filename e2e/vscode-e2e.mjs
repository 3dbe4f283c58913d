// Real VS Code end to end: code-server + headless Chromium (playwright-core) drive the packaged
// extension in a two-folder workspace (alpha, beta), as a person would:
//   1. the status item names the folder and follows the editor: opening beta's file -> "beta"
//   2. clicking it opens the menu; Checkpoint opens an editor tab; multi-line text with <T> is
//      saved with Ctrl+Enter into beta's brain (checked with the CLI: alpha's stays empty)
//   3. the tooltip shows <T> literally
//   4. Resume opens a read-only document; closing it leaves no dirty editor and no save prompt
//   5. History -> v1 -> Compare opens the diff editor on rendered Markdown (no JSON, no session id)
//   6. live endless mode (infiniteContext.endless.enabled): the server starts the per-user proxy
//      (temp data dir, free port, a fake upstream here); a new integrated terminal gets
//      ANTHROPIC_BASE_URL; one Claude Code-shaped request through it and the item beside the
//      budget shows the saving ($(zap) -NN%), its tooltip the figures; Stop from its menu
//   7. an interpreter without the package: one error, an error state, and the menu's remedies
// Screenshots of each step go to e2e/screenshots/. The temp folder is removed at the end
// (IC_E2E_KEEP=1 keeps it).
//
// Env: IC_PYTHON (interpreter with infinite-context installed; default ../.venv/bin/python).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
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
const beta = join(root, "beta");
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
const settings = {
  "infiniteContext.interpreter": python,
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
const env = {
  ...process.env,
  TMPDIR: ownTmp,
  XDG_CONFIG_HOME: join(root, "xdg-config"),
  XDG_DATA_HOME: join(root, "xdg-data"),
  // The proxy the editor starts: its own data dir, the fake upstream, an epoch on the first long request.
  INFINITE_CONTEXT_DATA_DIR: dataDir,
  INFINITE_CONTEXT_PROXY_UPSTREAM: upstreamUrl,
  INFINITE_CONTEXT_PROXY_EPOCH_TOKENS: "1000",
};
delete env.ANTHROPIC_BASE_URL;
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
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let step = 0;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const shot = async (name) => {
    step += 1;
    const path = join(shots, `${String(step).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path });
    console.log(`  screenshot ${path}`);
  };
  const statusItem = (text) => page.locator("#workbench\\.parts\\.statusbar .statusbar-item", { hasText: text }).first();
  const palette = async (command) => {
    await page.keyboard.press("F1");
    await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
    await page.keyboard.type(`>${command}`);
    await page.waitForTimeout(600);
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

  console.log("1. two folders: the item names the folder and follows the editor");
  // The language server's first budget notification adds "· no checkpoint" to the folder name.
  await statusItem("no checkpoint").waitFor({ timeout: 90000 });
  const first = (await statusItem("no checkpoint").innerText()).trim();
  check(first.includes("alpha"), `the item names alpha (the first folder) at start: "${first}"`);
  await shot("two-folders-alpha");
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
  await page.keyboard.press("Backspace");
  await page.keyboard.type("beta.py");
  await page.waitForTimeout(1000);
  await page.keyboard.press("Enter");
  await statusItem("beta").waitFor({ timeout: 15000 });
  check(true, `after opening beta.py the item reads "${(await statusItem("beta").innerText()).trim()}"`);
  await shot("beta-active");

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
  await shot("after-checkpoint");

  console.log("3. the tooltip shows <T> literally");
  await statusItem("v1").hover();
  const hover = page.locator(".monaco-hover, .workbench-hover").filter({ hasText: "Current task" }).first();
  await hover.waitFor({ timeout: 10000 });
  const hoverText = await hover.innerText();
  check(hoverText.includes("List<T>"), `tooltip: ${hoverText.split("\n").find((l) => l.includes("Current task"))}`);
  await shot("tooltip");
  await page.mouse.move(700, 400);

  console.log("4. Resume opens a read-only document");
  await palette("Infinite Context: Resume");
  await page.locator(".tabs-container .tab", { hasText: "Resume (beta).md" }).first().waitFor({ timeout: 15000 });
  await page.waitForTimeout(800);
  const resumeText = await editorText();
  check(resumeText.includes("List<T>"), "Resume shows List<T> literally");
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  await page.keyboard.type("x");
  await page.waitForTimeout(500);
  await shot("resume-read-only");
  check((await page.locator(".tabs-container .tab.dirty").count()) === 0, "no dirty editor after typing into Resume");
  await palette("View: Close Editor");
  await page.waitForTimeout(800);
  check((await page.locator(".monaco-dialog-box").count()) === 0, "closing Resume asks nothing (no save prompt)");
  check((await page.locator(".tabs-container .tab", { hasText: "Resume" }).count()) === 0, "Resume is closed");

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
  check(diffText.includes("Map<K, V>") && diffText.includes("List<T>"), "the diff editor shows both versions' Markdown");
  check(!diffText.includes("session_id") && !diffText.includes('"active_context"'), "rendered Markdown, not state JSON");
  await shot("history-diff");
  await palette("View: Close All Editors");
  await page.waitForTimeout(500);
  check((await page.locator(".monaco-dialog-box").count()) === 0, "closing the diff asks nothing");

  console.log("6. live endless mode: the proxy starts, terminals go through it, the item shows the saving");
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
  await page.locator(".terminal-wrapper.active, .xterm").first().waitFor({ timeout: 20000 });
  await page.waitForTimeout(1500);
  await page.keyboard.type(`echo "$ANTHROPIC_BASE_URL" > ${envFile}\n`);
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
  await palette("Notifications: Clear All Notifications");
  await page.waitForTimeout(500);
  await zap.hover();
  const proxyHover = page.locator(".monaco-hover, .workbench-hover").filter({ hasText: "Last request" }).first();
  await proxyHover.waitFor({ timeout: 10000 });
  const proxyTip = await proxyHover.innerText();
  check(proxyTip.includes("tokens saved") && proxyTip.includes(proxyUrl), `tooltip: ${proxyTip.split("\n").find((l) => l.includes("tokens saved"))}`);
  await shot("live-saving");
  await page.mouse.move(700, 400);
  await zap.click();
  await pickItem("Stop Live Proxy");
  await page.waitForFunction(
    () => [...document.querySelectorAll("#workbench\\.parts\\.statusbar .statusbar-item")].some((e) => e.querySelector(".codicon-zap") && e.textContent.includes("off")),
    null,
    { timeout: 15000 },
  );
  check(!existsSync(join(dataDir, "proxy", "proxy.json")), `Stop Live Proxy stopped it; the item reads "${(await zap.innerText()).trim()}"`);
  await shot("live-proxy-stopped");
  await palette("Notifications: Clear All Notifications");

  console.log("7. an interpreter without the package: one message, an error state, remedies");
  // A virtual environment in alpha without the package: Select Interpreter offers it.
  const broken = join(alpha, ".venv");
  execFileSync("python3", ["-m", "venv", "--without-pip", broken]);
  await palette("Notifications: Clear All Notifications");
  await palette("Infinite Context: Select Interpreter");
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: broken }).first().waitFor({ timeout: 15000 });
  await shot("select-interpreter");
  await pickItem(broken);
  const toast = page.locator(".notification-toast", { hasText: "Infinite Context cannot start" }).first();
  await toast.waitFor({ timeout: 60000 });
  const toastText = await toast.innerText();
  const cause = toastText.split("\n").find((l) => l.includes("cannot start")) ?? toastText;
  check(toastText.includes("does not have infinite-context installed"), `the message names the cause: ${cause}`);
  check(toastText.includes("Install into this interpreter") && toastText.includes("Select Interpreter"), "its actions are offered");
  await page.waitForTimeout(1500);
  const toasts = await page.locator(".notification-toast").allInnerTexts();
  check(toasts.filter((t) => /Infinite Context|infinite-context|language server/i.test(t)).length === 1, `one message, not five (${toasts.length} toast(s))`);
  const errorItem = page.locator("#workbench\\.parts\\.statusbar .statusbar-item.error-kind, #workbench\\.parts\\.statusbar .statusbar-item", { hasText: "Infinite Context" }).first();
  await errorItem.waitFor({ timeout: 10000 });
  await shot("error-state");
  await errorItem.click();
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "Select Interpreter" }).first().waitFor({ timeout: 10000 });
  const menu = await page.locator(".quick-input-widget .monaco-list-rows").first().innerText();
  check(["Install into this interpreter", "Open Settings", "Show Logs"].every((a) => menu.includes(a)), "the menu offers the remedies");
  await shot("error-menu");
  await page.keyboard.press("Escape");
  console.log("e2e: OK");
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
