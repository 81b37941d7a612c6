// @ts-check
// How the "Connected apps" section tells of a connection: its name, what it may do, when, its state, the
// order shown and the activity in words, in both languages; and its words kept apart from the others'.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import {
  activityKey, clientName, lastUsedWords, scopeWords, sortConnections, stateWords, when,
} from "../../../client/memmy_kb_client/desktop/static/connection-rules.js";
import { setLanguage, t } from "../../../client/memmy_kb_client/desktop/static/i18n.js";
import { CONNECTION_TEXT } from "../../../client/memmy_kb_client/desktop/static/text-connections.js";
import { SYNC_TEXT } from "../../../client/memmy_kb_client/desktop/static/text-sync.js";
import { TEAM_TEXT } from "../../../client/memmy_kb_client/desktop/static/text-teams.js";
import { TEXT } from "../../../client/memmy_kb_client/desktop/static/text.js";

/** @typedef {import("../../../client/memmy_kb_client/desktop/static/connection-rules.js").Connection} Connection */

beforeEach(() => setLanguage("en"));

/**
 * @param {string} id
 * @param {Partial<Connection>} [extra]
 * @returns {Connection}
 */
const connection = (id, extra) => ({
  id, client_id: `https://${id}.example/client.json`, client_name: id.toUpperCase(), scope: ["kb.search"],
  since: "2026-12-01T08:00:00Z", last_used: "2026-12-02T08:00:00Z", state: "active", revoked_at: null, ...extra,
});

test("an app is named by its registered name, else its client id, else in words", () => {
  assert.equal(clientName(connection("claude")), "CLAUDE");
  assert.equal(clientName({ client_id: "https://app.example/c.json", client_name: null }), "https://app.example/c.json");
  assert.equal(clientName({ client_id: "", client_name: "" }), "Unnamed app");
  setLanguage("zh");
  assert.equal(clientName({ client_id: "" }), "未命名的应用");
});

test("what an app may do: search, read only, in either language; an unknown scope as it is", () => {
  assert.equal(scopeWords(["kb.search"]), "search, read only");
  assert.equal(scopeWords(["kb.search", "kb.search", "kb.other"]), "search, kb.other, read only");
  assert.equal(scopeWords(undefined), "read only");
  setLanguage("zh");
  assert.equal(scopeWords(["kb.search"]), "检索，只读");
});

test("times in the page's language to the minute, in the zone asked; an unreadable one as it is", () => {
  assert.equal(when("2026-12-07T10:05:00Z", "UTC"), "7 Dec 2026, 10:05");
  assert.equal(when("2026-12-07T10:05:00Z", "Asia/Shanghai"), "7 Dec 2026, 18:05");
  assert.equal(when("yesterday", "UTC"), "yesterday");
  assert.equal(when(null), "");
  setLanguage("zh");
  assert.match(when("2026-12-07T10:05:00Z", "Asia/Shanghai"), /^2026年12月7日 18:05$/);
});

test("the active apps come first, each part most recently used first", () => {
  const old = connection("old", { last_used: "2026-11-01T00:00:00Z" });
  const fresh = connection("fresh", { last_used: "2026-12-05T00:00:00Z" });
  const never = connection("never", { last_used: null, since: "2026-12-06T00:00:00Z" });
  const gone = connection("gone", { state: "revoked", revoked_at: "2026-12-06T00:00:00Z", last_used: "2026-12-06T00:00:00Z" });
  assert.deepEqual(sortConnections([gone, old, fresh, never]).map((c) => c.id), ["never", "fresh", "old", "gone"]);
});

test("the state and the last use in words: connected, or disconnected and when; never used said so", () => {
  assert.equal(stateWords(connection("a")), "Connected");
  const gone = connection("a", { state: "revoked", revoked_at: "2026-12-07T10:05:00Z" });
  assert.equal(stateWords(gone, "UTC"), "Disconnected 7 Dec 2026, 10:05");
  assert.equal(lastUsedWords(connection("a"), "UTC"), "Last used 2 Dec 2026, 08:00");
  assert.equal(lastUsedWords(connection("a", { last_used: null })), "Not used yet");
  setLanguage("zh");
  assert.match(stateWords(gone, "UTC"), /^已断开（2026年12月7日 10:05）$/);
});

test("an activity entry names its app (else the connection's id); an unknown kind is left out", () => {
  assert.deepEqual(activityKey({ kind: "connection_added", connection_id: "conn_1", client_name: "Claude", at: "" }), ["connAdded", "Claude"]);
  assert.deepEqual(activityKey({ kind: "connection_revoked", connection_id: "conn_1", client_name: null, at: "" }), ["connRemoved", "conn_1"]);
  const unknown = /** @type {any} */ ({ kind: "connection_renamed", connection_id: "conn_1", at: "" });
  assert.equal(activityKey(unknown), null);
  assert.equal(t("connAdded", { name: "Claude" }), "Claude connected");
});

test("the section's words shadow none of the page's others, and both languages have them all", () => {
  const others = new Set([TEXT, SYNC_TEXT, TEAM_TEXT].flatMap((table) => [...Object.keys(table.en), ...Object.keys(table.zh)]));
  assert.deepEqual(Object.keys(CONNECTION_TEXT.en).filter((key) => others.has(key)), []);
  assert.deepEqual(Object.keys(CONNECTION_TEXT.zh).sort(), Object.keys(CONNECTION_TEXT.en).sort());
  // The empty state says what a connected app is and that local agents use the desktop instead
  assert.match(CONNECTION_TEXT.en.noConnections, /desktop service/);
  assert.match(CONNECTION_TEXT.zh.noConnections, /桌面服务/);
});
