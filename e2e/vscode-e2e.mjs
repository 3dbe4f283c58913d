// Real VS Code end to end: code-server + headless Chromium (playwright-core) drive the packaged
// extension. Installs extension/infinite-context.vsix, opens a temp workspace, waits for the
// status bar item, runs "Infinite Context: Checkpoint" from the palette and waits for the version
// in the status bar to go up. Screenshots go to e2e/screenshots/.
//
// Env: IC_PYTHON (interpreter with infinite-context installed; default ../.venv/bin/python).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync } from "node:fs";
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
mkdirSync(shots, { recursive: true });

function fail(message) {
  console.error(`e2e: ${message}`);
  process.exitCode = 1;
  throw new Error(message);
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
const workspace = join(root, "project");
const userData = join(root, "user-data");
const extensions = join(root, "extensions");
mkdirSync(join(workspace, "src"), { recursive: true });
writeFileSync(join(workspace, "src", "app.py"), "def main():\n    pass\n");
mkdirSync(join(userData, "User"), { recursive: true });
writeFileSync(
  join(userData, "User", "settings.json"),
  JSON.stringify({
    "infiniteContext.interpreter": python,
    "infiniteContext.storeUrl": `sqlite:///${join(root, "brain.db")}`,
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": false,
  }),
);
const env = { ...process.env, XDG_CONFIG_HOME: join(root, "xdg-config"), XDG_DATA_HOME: join(root, "xdg-data") };
execFileSync(codeServer, ["--extensions-dir", extensions, "--install-extension", vsix], { env, stdio: "inherit" });

const port = await freePort();
const server = spawn(
  codeServer,
  [
    "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check",
    "--disable-workspace-trust", "--user-data-dir", userData, "--extensions-dir", extensions, workspace,
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
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;
  for (let i = 0; i < 60; i++) {
    try {
      await page.goto(url, { timeout: 5000 });
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
  // The language server's first budget notification turns "Infinite Context" into "… · no checkpoint".
  const item = page.locator('#workbench\\.parts\\.statusbar .statusbar-item:has-text("no checkpoint")').first();
  await item.waitFor({ timeout: 90000 });
  const before = (await item.innerText()).trim();
  console.log(`status bar before: ${before}`);
  await page.screenshot({ path: join(shots, "1-status-bar.png") });

  await page.keyboard.press("F1");
  await page.keyboard.type(">Infinite Context: Checkpoint");
  await page.waitForTimeout(500);
  await page.keyboard.press("Enter");
  await page.waitForSelector(".quick-input-widget input", { timeout: 10000 });
  await page.keyboard.type("Current task: e2e checkpoint in src/app.py");
  await page.screenshot({ path: join(shots, "2-checkpoint-input.png") });
  await page.keyboard.press("Enter");
  const after = page.locator('#workbench\\.parts\\.statusbar .statusbar-item:has-text("· v1")').first();
  await after.waitFor({ timeout: 30000 });
  console.log(`status bar after: ${(await after.innerText()).trim()}`);
  await page.screenshot({ path: join(shots, "3-after-checkpoint.png") });
  console.log("e2e: OK");
} finally {
  await browser.close();
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {
    // already gone
  }
}
