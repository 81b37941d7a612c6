// @ts-check
// The desktop's synced folders under the lists: each link's state, a paused pass's deletions to confirm,
// a link whose KB is gone pointed at another, and the lists and files read again after a pass.
import { api, human } from "./api.js";
import { confirmDanger, showDialog } from "./dialog.js";
import { $, el, notice, theirs } from "./dom.js";
import { pausedReason } from "./format.js";
import { language, t, tn } from "./i18n.js";
import { loadListing, renderEntries } from "./kb.js";
import { loadLists } from "./lists.js";
import { state } from "./state.js";

/** @typedef {import("./state.js").Link} Link */
/** @typedef {import("./state.js").KnowledgeBase} KnowledgeBase */

/**
 * What the last pass has to tell beyond the state: failed versions, files waiting for room, the deletions
 * counted since the last confirmation.
 * @param {Link} link
 */
function linkNotes(link) {
  const notes = (link.failed || []).map((f) => el("div", { class: "reason", text: t("linkFailed", { path: f.path, reason: f.reason }) }));
  if (link.wait_for_room) notes.push(el("div", { class: "reason", text: t("waitRoom", { n: link.wait_for_room }) }));
  if (link.deleted_since_confirmation) {
    notes.push(el("div", { class: "muted", text: t("deletedSince", { n: link.deleted_since_confirmation, total: link.brought_in }) }));
  }
  return notes;
}

/**
 * The link's KB among the person's own, or null: deleted, or none of theirs any more.
 * @param {Link} link
 * @returns {KnowledgeBase | null}
 */
function kbOfLink(link) {
  return state.kbs.find((item) => item.id === link.kb_id && item.role === "owner") || null;
}

/**
 * The words for a link's state: gone, paused and why, in error, partly done, or its state.
 * @param {Link} link
 * @param {boolean} gone its KB is gone
 * @returns {string}
 */
export function linkWords(link, gone) {
  if (gone) return t("kbGone");
  if (link.state === "paused") return t("link_paused", { reason: pausedReason(link.paused) });
  if (link.state === "error") return t("link_error", { error: link.error || "" });
  if (link.state === "idle" && ((link.failed || []).length || link.wait_for_room)) return t("link_partly");
  return t(`link_${link.state}`);
}

/** @param {Link} link */
function linkItem(link) {
  if (link.state === "unreadable") {
    return el("li", { "data-link": "", class: "link-error" }, el("div", { class: "link-state error", text: t("linksUnreadable", { error: link.error || "" }) }));
  }
  const kb = kbOfLink(link);
  const gone = !kb && Boolean(state.kbsLoaded);
  const missing = link.state === "paused" && (link.paused || "").startsWith("the folder is missing");
  const last = link.last || {};
  const deleting = (last.counts || {}).delete || 0;
  const words = linkWords(link, gone);
  /** @param {number} at */
  const time = (at) => new Date(at * 1000).toLocaleTimeString(language() === "en" ? "en" : "zh-CN");
  const when = link.state === "paused" || gone ? "" : link.last_pass_at ? ` · ${t("lastSync", { time: time(link.last_pass_at) })}` : "";
  const lines = [el("div", { class: `link-state ${gone ? "error" : link.state}`, text: words + when })];
  if (link.state === "paused" && !gone) {
    lines.push(el("div", { class: "link-pending", text: t("lastPaused", { n: deleting }) }));
    if (missing) lines.push(el("p", { class: "link-advice", text: t("missingAdvice") }));
  }
  const buttons = [];
  if (gone) buttons.push(el("button", { type: "button", class: "primary", text: t("relink"), onclick: () => relinkDialog(link) }));
  const unlink = el("button", { type: "button", class: "unlink", text: t("unlink"), onclick: () => confirmDanger(
    t("unlink"), t("confirmUnlink", { dir: link.dir }), t("unlink"), async () => {
      await linkAction("unlink", link);
      notice(t("unlinked", { dir: link.dir }));
    }) });
  const confirm = link.state === "paused" && !gone
    ? el("button", { type: "button", class: "danger", text: t("confirmDelete"), onclick: () => confirmDeletion(link, kb) }) : null;
  // A missing folder: reconnecting it or stopping its sync comes first, the deletion last.
  buttons.push(...(missing ? [unlink, confirm] : [confirm, unlink]).filter((button) => button !== null));
  return el("li", { "data-link": link.dir, class: `link-${link.state}` },
    el("div", {}, el("code", { text: link.dir }), " → ", theirs(kb ? kb.name : link.kb_id)),
    ...lines, ...linkNotes(link), el("div", { class: "row" }, ...buttons));
}

/**
 * "Confirm deletion": asked first, with how many files go and the first of their names.
 * @param {Link} link
 * @param {KnowledgeBase | null} kb
 */
function confirmDeletion(link, kb) {
  const last = link.last || {};
  const n = (last.counts || {}).delete || 0;
  const names = last.delete_first || [];
  const kbName = kb ? kb.name : link.kb_id;
  const body = [];
  if ((link.paused || "").startsWith("the folder is missing")) body.push(el("p", { class: "warn", text: t("missingAdvice") }));
  body.push(el("p", { text: t("confirmDeleteBody", { dir: link.dir, kb: kbName }) }),
    el("ul", { class: "doomed" }, ...names.map((name) => el("li", {}, theirs(name)))));
  if (n > names.length) body.push(el("p", { class: "muted", text: t("andMore", { n: n - names.length }) }));
  showDialog(tn("confirmDeleteTitle", n, { kb: kbName }), body,
    [{ label: tn("deleteN", n), cls: "danger", run: () => linkAction("confirm", link) }]);
  /** @type {HTMLElement} */ ($("dialog-buttons").lastElementChild).focus();  // Cancel: Enter alone deletes nothing
}

/**
 * A link whose KB is gone, pointed at another of the person's own KBs (the same folder, synced anew).
 * @param {Link} link
 */
function relinkDialog(link) {
  const own = state.kbs.filter((kb) => kb.role === "owner" && kb.id !== link.kb_id);
  if (!own.length) { notice(t("noOtherKb")); return; }
  const select = el("select", { name: "kb" }, ...own.map((kb) => el("option", { value: kb.id, text: kb.name })));
  showDialog(t("relink"), [el("p", {}, el("code", { text: link.dir })), el("label", {}, el("span", { text: t("relinkTo") }), select)], [
    { label: t("relink"), cls: "primary", run: async () => {
      await api("POST", "/links/relink", { dir: link.dir, kb: select.value });
      notice(t("relinked", { dir: link.dir, kb: select.selectedOptions[0].textContent }));
      await loadLinks();
    } },
  ]);
}

/**
 * @param {"unlink" | "confirm"} action
 * @param {Link} link
 */
async function linkAction(action, link) {
  try {
    await api("POST", `/links/${action}`, { dir: link.dir });
  } catch (error) {
    notice(human(error));
  }
  await loadLinks();
}

/**
 * Whether a folder was linked or unlinked between two readings of the links.
 * @param {readonly Link[] | undefined} before
 * @param {readonly Link[]} after
 */
export function linkedChanged(before, after) {
  /** @param {Link} l */
  const linked = (l) => `${l.kb_id}\u0000${l.dir}`;
  return (before || []).map(linked).join("\n") !== after.map(linked).join("\n");
}

/**
 * The links whose pass ran since the last reading (none on the first).
 * @param {Record<string, number | undefined> | undefined} passes each link's last pass, as last seen
 * @param {readonly Link[]} links
 */
export function passedSince(passes, links) {
  return links.filter((l) => passes && l.last_pass_at && passes[l.dir] !== l.last_pass_at);
}

/**
 * How long until the links are read again: soon while one syncs or waits.
 * @param {readonly Link[]} links
 */
export function linksDelayMs(links) {
  return links.some((l) => l.state === "syncing" || l.state === "waiting") ? 2000 : 10000;
}

/** @returns {Promise<void>} */
export async function loadLinks() {
  clearTimeout(state.linksTimer);
  /** @type {Link[]} */
  let links = [];
  try {
    links = (await api("GET", "/links")).links || [];
  } catch (_) {
    return;  // an older service without linked folders: nothing to show
  }
  let section = document.getElementById("links");
  if (!section) {
    section = el("section", { id: "links", class: "linked", "aria-labelledby": "links-heading" },
      el("h2", { id: "links-heading", text: t("links") }), el("ul", { id: "link-list", class: "links" }));
    $("lists").append(section);
  }
  // A link in error may be one whose KB was deleted meanwhile: the lists read again tell.
  if (links.some((l) => l.state === "error" && kbOfLink(l))) await loadLists().catch(() => {});
  const changed = linkedChanged(state.links, links);
  state.links = links;
  section.hidden = !links.length;
  $("link-list").replaceChildren(...links.map(linkItem));
  // A folder linked or unlinked: the open KB's files marked (or no longer) as its.
  if (state.listing && changed) renderEntries(state.listing);
  // A pass that just ran changed a KB: its file count, and its files if it is the one open.
  const passes = Object.fromEntries(links.map((l) => [l.dir, l.last_pass_at]));
  const moved = passedSince(state.linkPasses, links);
  state.linkPasses = passes;
  if (moved.length) {
    // One after the other: loadLists swaps state.kb for the fresh one, which a listing under way would
    // take for the owner having opened another KB meanwhile.
    const open = state.kb;
    const reopen = Boolean(open && moved.some((l) => l.kb_id === open.id));
    loadLists().catch(() => {}).then(() => (reopen ? loadListing() : undefined));
  }
  state.linksTimer = setTimeout(loadLinks, linksDelayMs(links));
}
