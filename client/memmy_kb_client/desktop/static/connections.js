// @ts-check
// The "Connected apps" section: the remote agents the person allowed to search their knowledge bases
// through the MCP endpoint (GET /me/connections), what each may do and when it was last used, a
// Disconnect asked first (DELETE /me/connections/{id}), and the recent connection activity.
import { api, human, seg } from "./api.js";
import { confirmDanger } from "./dialog.js";
import { $, el, said, theirs } from "./dom.js";
import { t } from "./i18n.js";
import {
  activityKey, clientName, lastUsedWords, scopeWords, sortConnections, stateWords, when,
} from "./connection-rules.js";

/** @typedef {import("./connection-rules.js").Connection} Connection */
/** @typedef {import("./connection-rules.js").ConnectionActivity} ConnectionActivity */

// What the section holds between readings: the last answer, drawn again in the other language.
const held = {
  /** @type {Connection[]} */
  connections: [],
  /** @type {ConnectionActivity[]} */
  activity: [],
  loaded: false,
  error: "",
};

/**
 * A line of the section's own: what was done ("ok") or what went wrong ("error").
 * @param {string} message
 * @param {"ok" | "error"} [kind]
 */
function say(message, kind = "ok") {
  const line = $("connections-status");
  line.className = kind;
  line.textContent = message;
}

/** The connections read again; a failure is said in the section, not over the page. */
export async function loadConnections() {
  try {
    const answer = await api("GET", "/me/connections");
    held.connections = answer.connections || [];
    held.activity = answer.activity || [];
    held.loaded = true;
    held.error = "";
  } catch (error) {
    held.error = t("connectionsUnreadable", { error: human(error) });
  }
  renderConnections();
}

/**
 * Disconnecting, asked first: the app's tokens stop working at once.
 * @param {Connection} connection
 */
function disconnect(connection) {
  const name = clientName(connection);
  confirmDanger(t("disconnect"), t("confirmDisconnect", { name }), t("disconnect"), async () => {
    await api("DELETE", `/me/connections/${seg(connection.id)}`);
    say(t("disconnected", { name }));
    await loadConnections();
    // Its button is gone: once the dialog has closed, the focus goes to the section.
    $("dialog").addEventListener("close", () => $("connections-heading").focus(), { once: true });
  });
}

/** @param {Connection} connection */
function connectionItem(connection) {
  const name = clientName(connection);
  const active = connection.state !== "revoked";
  return el("li", { "data-connection": connection.id, "data-state": connection.state },
    el("strong", { class: "client-name" }, theirs(name)),
    el("span", { class: "meta" }, t("connSince", { when: when(connection.since) }), " · ", lastUsedWords(connection)),
    el("span", { class: "meta scope" }, t("connMay", { what: scopeWords(connection.scope) })),
    el("span", { class: "state", text: stateWords(connection) }),
    active ? el("div", { class: "actions" },
      el("button", { type: "button", class: "danger", text: t("disconnect"), "aria-label": `${t("disconnect")} ${name}`,
        onclick: () => disconnect(connection) })) : null);
}

/** @param {ConnectionActivity} entry */
function activityItem(entry) {
  const words = activityKey(entry);
  if (!words) return null;
  return el("li", { "data-kind": entry.kind },
    el("time", { datetime: entry.at, text: when(entry.at) }), " ", ...said(words[0], words[1]));
}

export function renderConnections() {
  const shown = sortConnections(held.connections);
  const none = held.loaded && !shown.length;
  $("connection-list").replaceChildren(...(none ? [el("li", { class: "muted", text: t("noConnections") })] : shown.map(connectionItem)));
  const items = held.activity.map(activityItem).filter((item) => item !== null);
  $("connection-activity-part").hidden = !held.loaded || (!items.length && none);
  $("connection-activity").replaceChildren(...(items.length ? items : [el("li", { class: "muted", text: t("noConnActivity") })]));
  $("connections-error").textContent = held.error;
  $("connections-error").hidden = !held.error;
}
