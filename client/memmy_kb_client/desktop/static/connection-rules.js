// @ts-check
// How the "Connected apps" section tells of a connection: its client's name, what it may do, when, its
// state, and the activity in words; pure, unit-tested (tests/unit/page/connection-rules.test.js).
import { language, t } from "./i18n.js";

/**
 * An MCP client that reached the remote endpoint with one of the person's tokens (GET /me/connections).
 * @typedef {object} Connection
 * @property {string} id
 * @property {string} client_id
 * @property {string | null} [client_name]
 * @property {string[]} scope
 * @property {string} since
 * @property {string | null} [last_used]
 * @property {"active" | "revoked"} state
 * @property {string | null} [revoked_at]
 */
/**
 * @typedef {object} ConnectionActivity
 * @property {"connection_added" | "connection_revoked"} kind
 * @property {string} connection_id
 * @property {string | null} [client_name]
 * @property {string} at
 */

// What each scope lets an app do, in words; the read-only part is said once, after them all.
/** @type {Record<string, string>} */
const SCOPE_WORDS = { "kb.search": "scopeSearch" };

/**
 * The client's name as it registered it, else its client id (a URL or an opaque id), else "Unnamed app".
 * @param {{client_name?: string | null, client_id?: string}} connection
 */
export function clientName(connection) {
  return connection.client_name || connection.client_id || t("unnamedClient");
}

/**
 * What the app may do: its scopes in words ("search"), an unknown one as it is, then "read only" (the
 * remote endpoint's tools are all read-only).
 * @param {readonly string[] | undefined} scope
 */
export function scopeWords(scope) {
  const words = [...new Set((scope || []).map((s) => (SCOPE_WORDS[s] ? t(SCOPE_WORDS[s]) : s)))];
  return [...words, t("scopeReadOnly")].join(language() === "zh" ? "，" : ", ");
}

/**
 * A time of the cloud's in the page's language, to the minute, in ``timeZone`` (the browser's by default);
 * an unreadable one as it is.
 * @param {string | null | undefined} stamp
 * @param {string} [timeZone]
 */
export function when(stamp, timeZone) {
  if (!stamp) return "";
  const moment = new Date(stamp);
  if (Number.isNaN(moment.getTime())) return String(stamp);
  return new Intl.DateTimeFormat(language() === "en" ? "en-GB" : "zh-CN", {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZone,
  }).format(moment);
}

/**
 * The connections in the order shown: the active ones first, each part most recently used first.
 * @param {readonly Connection[]} connections
 * @returns {Connection[]}
 */
export function sortConnections(connections) {
  const recent = (/** @type {Connection} */ c) => Date.parse(c.last_used || c.since || "") || 0;
  return [...connections].sort((a, b) =>
    Number(a.state === "revoked") - Number(b.state === "revoked") || recent(b) - recent(a));
}

/**
 * The connection's state in words: connected, or disconnected and when.
 * @param {Connection} connection
 * @param {string} [timeZone]
 */
export function stateWords(connection, timeZone) {
  if (connection.state !== "revoked") return t("connActive");
  return t("connRevoked", { when: when(connection.revoked_at, timeZone) }).trim();
}

/**
 * When it was last used, in words ("Not used yet" for never).
 * @param {Connection} connection
 * @param {string} [timeZone]
 */
export function lastUsedWords(connection, timeZone) {
  return connection.last_used ? t("connLastUsed", { when: when(connection.last_used, timeZone) }) : t("connNeverUsed");
}

/**
 * The sentence of an activity entry, its app's name where ``{name}`` stands: ``[key, name]`` for dom.js's
 * ``said``; an unknown kind is left out.
 * @param {ConnectionActivity} entry
 * @returns {[string, string] | null}
 */
export function activityKey(entry) {
  const key = { connection_added: "connAdded", connection_revoked: "connRemoved" }[entry.kind];
  return key ? [key, entry.client_name || entry.connection_id] : null;
}
