import { strict as assert } from "node:assert";
import { test } from "node:test";

import { age, Budget, compact, historyItems, level, statusText, tooltip } from "../status";

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
