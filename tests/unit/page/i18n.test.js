// @ts-check
// The page's words looked up: the language chosen, a sentence filled, a count, a failure's reason.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { COMMANDS, TEXT, chooseLanguage, reasonText, setCommands, setLanguage, t, tn } from "../../../client/memmy_kb_client/desktop/static/i18n.js";

const DEFAULTS = { ...COMMANDS };

beforeEach(() => {
  setLanguage("en");
  setCommands(DEFAULTS);
});

test("the language asked for wins, else the browser's first: English only when it comes first", () => {
  assert.equal(chooseLanguage("en", ["zh-CN"]), "en");
  assert.equal(chooseLanguage("zh", ["en-US"]), "zh");
  assert.equal(chooseLanguage("fr", ["en-GB", "zh"]), "en");
  assert.equal(chooseLanguage(null, ["EN"]), "en");
  assert.equal(chooseLanguage(null, ["de", "en"]), "zh");
  assert.equal(chooseLanguage(null, [""]), "zh");
  assert.equal(chooseLanguage(null, []), "zh");
});

test("a sentence in the page's language, its values filled", () => {
  assert.equal(t("added", { name: "Ann" }), "Added Ann.");
  setLanguage("zh");
  assert.equal(t("added", { name: "Ann" }), "已添加 Ann。");
});

test("a value is text, never a replacement pattern", () => {
  assert.equal(t("added", { name: "$& and $'" }), "Added $& and $'.");
});

test("a sentence the language lacks falls back to English, then to its key", () => {
  setLanguage("zh");
  assert.equal(TEXT.zh.scopeOne, undefined);
  assert.equal(t("scopeOne"), "Searched 1 knowledge base");
  assert.equal(t("no_such_key"), "no_such_key");
});

test("the commands the service named fill their places", () => {
  assert.equal(t("needLogin"), "Not signed in: choose Sign in, or run memmy-kb desktop login.");
  setCommands({ login: "/opt/bin/memmy-kb desktop login" });
  assert.equal(t("needLogin"), "Not signed in: choose Sign in, or run /opt/bin/memmy-kb desktop login.");
});

test("one takes the singular where the language has one; Chinese has none", () => {
  assert.equal(tn("kbStats", 1, { files: 1, size: "1 KB" }), "1 file · 1 KB");
  assert.equal(tn("kbStats", 2, { files: 2, size: "1 KB" }), "2 files · 1 KB");
  assert.equal(tn("kbStats", 0, { files: 0, size: "0 B" }), "0 files · 0 B");
  assert.equal(tn("scope", 3), "Searched 3 knowledge bases");
  setLanguage("zh");
  assert.equal(tn("kbStats", 1, { files: 1, size: "1 KB" }), "1 个文件 · 1 KB");
});

test("the synced folders' words are there in both languages", () => {
  assert.equal(t("link_idle"), "Up to date");
  setLanguage("zh");
  assert.equal(t("link_idle"), "已同步");
});

test("a failure's reason in the page's language, the cloud's sentence only for a code it lacks", () => {
  assert.equal(reasonText({ reason_code: "invalid_pdf", reason: "bad pdf" }), "The file is not a valid PDF.");
  setLanguage("zh");
  assert.equal(reasonText({ reason_code: "invalid_pdf", reason: "bad pdf" }), "文件不是有效的 PDF。");
  assert.equal(reasonText({ reason_code: "brand_new", reason: "Something new." }), "Something new.");
  assert.equal(reasonText({ reason: "Only a sentence." }), "Only a sentence.");
  assert.equal(reasonText({}), "");
});

test("every sentence has both languages, but for the singular forms English alone has", () => {
  const zh = new Set(Object.keys(TEXT.zh));
  const en = new Set(Object.keys(TEXT.en));
  assert.deepEqual([...zh].filter((key) => !en.has(key)), []);
  assert.deepEqual([...en].filter((key) => !zh.has(key) && !key.endsWith("One")), []);
});
