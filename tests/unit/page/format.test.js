// @ts-check
// Values as the page shows them: sizes, a paused pass's reason, an excerpt's document and section.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { filePath, formatSize, isFile, pausedReason, sectionOf } from "../../../client/memmy_kb_client/desktop/static/format.js";
import { setLanguage } from "../../../client/memmy_kb_client/desktop/static/i18n.js";

beforeEach(() => setLanguage("en"));

test("a size in bytes, KB or MB, one decimal; nothing for an unknown one", () => {
  assert.equal(formatSize(0), "0 B");
  assert.equal(formatSize(1023), "1023 B");
  assert.equal(formatSize(1024), "1.0 KB");
  assert.equal(formatSize(1024 * 1024 - 1), "1024.0 KB");
  assert.equal(formatSize(1024 * 1024), "1.0 MB");
  assert.equal(formatSize(5.5 * 1024 * 1024), "5.5 MB");
  assert.equal(formatSize(undefined), "");
  assert.equal(formatSize(null), "");
});

test("a paused pass's reason in the page's words, the counts carried over", () => {
  assert.equal(pausedReason("the folder is empty"), "the folder is empty");
  assert.equal(pausedReason("the folder is missing (x)"), "the folder is missing (an unmounted disk?)");
  const many = "it would delete 22 of the 30 files this folder's sync brought in, 25 of 40 since the last confirmation";
  assert.equal(pausedReason(many), "it would delete 22 of the 30 files this folder's sync brought in, 25 of 40 since the last confirmation");
  setLanguage("zh");
  assert.equal(pausedReason(many), "将删除此文件夹同步进来的 30 个文件中的 22 个，自上次确认以来共 25/40 个");
  assert.equal(pausedReason("something new"), "something new");
  assert.equal(pausedReason(undefined), "");
});

test("a file an excerpt names has an id and a name", () => {
  assert.equal(isFile({ id: "f1", name: "a.md" }), true);
  assert.equal(isFile({ id: "", name: "a.md" }), false);
  assert.equal(isFile({ id: "f1", name: 3 }), false);
  assert.equal(isFile(null), false);
  assert.equal(isFile("f1"), false);
});

test("a file's path is its folder's and its name", () => {
  assert.equal(filePath({ id: "f", name: "a.md", folder_path: "2024/q1" }), "2024/q1/a.md");
  assert.equal(filePath({ id: "f", name: "a.md" }), "a.md");
});

test("a section is cited unless it is the file's name again, with or without its extension", () => {
  const file = { id: "f", name: "handbook.md" };
  assert.equal(sectionOf("Refunds", file), "Refunds");
  assert.equal(sectionOf(" handbook ", file), "");
  assert.equal(sectionOf("handbook.md", file), "");
  assert.equal(sectionOf(undefined, file), "");
  assert.equal(sectionOf(".env", { id: "f", name: ".env" }), "");
});
