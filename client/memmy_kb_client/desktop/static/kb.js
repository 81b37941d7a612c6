// @ts-check
// One knowledge base open: its folders and files, each row's actions, moving, and the file an excerpt
// opened. It tells the lists what changed through events.js (app.js wires them).
import { api, human, seg } from "./api.js";
import { askName, confirmDanger, showDialog } from "./dialog.js";
import { $, el, notice, theirs } from "./dom.js";
import { announce } from "./events.js";
import { formatSize } from "./format.js";
import { reasonText, t } from "./i18n.js";
import { folderId, isOwner, state } from "./state.js";
import { deleteWarning, fileNotes, versionActions } from "./versions.js";

/** @typedef {import("./state.js").KnowledgeBase} KnowledgeBase */
/** @typedef {import("./state.js").Listing} Listing */
/** @typedef {import("./state.js").Crumb} Crumb */
/** @typedef {import("./state.js").FolderEntry} FolderEntry */
/** @typedef {import("./state.js").FileEntry} FileEntry */

/**
 * A KB opened at its root, or at ``target``'s folder (``trail``) with its file's row marked (ask.js).
 * @param {KnowledgeBase} kb
 * @param {{trail: Crumb[], file: string}} [target]
 */
export function openKb(kb, target) {
  state.kb = kb;
  state.trail = target ? target.trail : [];
  state.found = target ? { file: target.file, shown: false } : null;
  state.listing = null;
  $("kb").hidden = false;
  $("welcome").hidden = true;
  $("uploads").replaceChildren();
  announce("kb-shown");
  renderKbHeader();
  loadListing();
  $("kb-heading").focus();
}

/** @param {string} [message] */
export function closeKb(message) {
  clearTimeout(state.timer);
  state.kb = null;
  $("kb").hidden = true;
  announce("kb-shown");
  if (message) notice(message);
}

export function renderKbHeader() {
  const kb = /** @type {KnowledgeBase} */ (state.kb);
  $("kb-heading").textContent = kb.name;
  const owner = isOwner();
  $("kb-tools").hidden = !owner;
  $("drop").hidden = !owner;
  $("kb-readonly").hidden = owner;
  if (!owner) {
    // Who shared it, by name ("someone" only when the cloud names no one).
    const sharer = (kb.owner || {}).display_name || (kb.owner || {}).user_id;
    const [before, after] = t(sharer ? "readOnlyBy" : "readOnly", { name: "\u0000" }).split("\u0000");
    $("kb-readonly").replaceChildren(before, ...(after !== undefined ? [theirs(sharer), after] : []));
  }
  /** @type {Crumb[]} */
  const crumbs = [{ id: null, name: t("root") }, ...state.trail];
  $("crumbs").replaceChildren(...crumbs.map((crumb, index) => {
    const last = index === crumbs.length - 1;
    return el("li", {}, last
      ? el("span", { "aria-current": "page", text: crumb.name })
      : el("button", { type: "button", class: "link", text: crumb.name, onclick: () => {
        state.trail = state.trail.slice(0, index);
        renderKbHeader();
        loadListing();
      } }));
  }));
}

/** @returns {Promise<void>} */
export async function loadListing() {
  clearTimeout(state.timer);
  const kb = state.kb;
  if (!kb) return;
  const folder = folderId();
  /** @type {Listing} */
  let listing;
  try {
    listing = await api("GET", `/knowledge-bases/${seg(kb.id)}/files${folder ? `?folder_id=${encodeURIComponent(folder)}` : ""}`);
  } catch (error) {
    const status = error instanceof Error && "status" in error ? error.status : undefined;
    if (status === 404 || status === 403) {
      if (state.trail.length) { state.trail = []; renderKbHeader(); return loadListing(); }
      closeKb(t("gone"));
      await announce("lists-stale").catch(() => {});
      return;
    }
    notice(human(error));
    return;
  }
  if (state.kb !== kb || folderId() !== folder) return;  // navigated away meanwhile
  state.listing = listing;
  renderEntries(listing);
  // Files just finished (or failed): the KB's file count and storage in the lists change with them.
  if (state.busy && !listing.refresh_after_seconds) announce("lists-stale").catch(() => {});
  state.busy = Boolean(listing.refresh_after_seconds);
  if (listing.refresh_after_seconds) {
    state.timer = setTimeout(loadListing, Math.max(1, listing.refresh_after_seconds) * 1000);
  }
}

/**
 * The owner's buttons on a row. A file still uploading, processing or failed is an upload, not yet a file
 * (its id is the upload's): the API moves and deletes files only.
 * @param {"file" | "folder"} kind
 * @param {FileEntry | FolderEntry} entry
 * @param {Listing} listing
 * @returns {HTMLElement[]}
 */
function rowActions(kind, entry, listing) {
  if (!isOwner()) return [];
  const kbPath = `/knowledge-bases/${seg(/** @type {KnowledgeBase} */ (state.kb).id)}`;
  const file = kind === "file" ? /** @type {FileEntry} */ (entry) : null;
  if (file && file.upload_id && file.id === file.upload_id) {
    if (file.status !== "failed") return [];
    return [el("button", { type: "button", text: t("dismiss"), "aria-label": t("dismissOne", { name: entry.name }), onclick: async () => {
      try {
        await api("DELETE", `${kbPath}/uploads/${seg(entry.id)}`);
      } catch (error) {
        notice(human(error));
      }
      await loadListing();
    } })];
  }
  const buttons = [];
  if (kind === "folder") {
    buttons.push(el("button", { type: "button", text: t("rename"), onclick: () => askName(t("rename"), entry.name, async (name) => {
      await api("PATCH", `${kbPath}/folders/${seg(entry.id)}`, { name });
      await loadListing();
    }) }));
  }
  if (file) buttons.push(...versionActions(file, loadListing));
  buttons.push(el("button", { type: "button", text: t("move"), onclick: () => moveDialog(kind, entry, listing) }));
  // A linked folder's file: the question says that the folder wins (versions.js).
  const warning = file ? deleteWarning(file) : "";
  buttons.push(el("button", { type: "button", class: "danger", text: t("del"), onclick: () => confirmDanger(
    t("del"), t(kind === "folder" ? "confirmDeleteFolder" : "confirmDeleteFile", { name: entry.name }), t("del"), async () => {
      await api("DELETE", `${kbPath}/${kind === "folder" ? "folders" : "files"}/${seg(entry.id)}`);
      await loadListing();
    }, warning) }));
  return buttons;
}

/**
 * Where an entry can move from the folder shown: the top level (unless there), one level up (from two
 * down or more), and each folder shown but itself; as (folder id, label), "" for the top level.
 * @param {readonly Crumb[]} trail
 * @param {readonly FolderEntry[]} folders
 * @param {string} moving the entry's id
 * @returns {[string, string][]}
 */
export function moveTargets(trail, folders, moving) {
  /** @type {[string, string][]} */
  const options = [];
  if (trail.length) options.push(["", t("rootFolder")]);
  if (trail.length > 1) options.push([/** @type {string} */ (trail[trail.length - 2].id), t("parentFolder")]);
  for (const folder of folders) if (folder.id !== moving) options.push([folder.id, folder.name]);
  return options;
}

/**
 * @param {"file" | "folder"} kind
 * @param {FileEntry | FolderEntry} entry
 * @param {Listing} listing
 */
function moveDialog(kind, entry, listing) {
  const select = el("select", { name: "target" });
  const options = moveTargets(state.trail, listing.folders, entry.id);
  for (const [value, label] of options) select.append(el("option", { value, text: label }));
  if (!options.length) select.append(el("option", { value: "-", text: "—", disabled: true }));
  showDialog(`${t("move")}: ${entry.name}`, [el("label", {}, el("span", { text: t("moveTo") }), select)], [
    { label: t("move"), cls: "primary", run: async () => {
      if (select.value === "-") return false;
      const target = select.value || null;
      const kbPath = `/knowledge-bases/${seg(/** @type {KnowledgeBase} */ (state.kb).id)}`;
      if (kind === "folder") await api("PATCH", `${kbPath}/folders/${seg(entry.id)}`, { parent_id: target });
      else await api("PATCH", `${kbPath}/files/${seg(entry.id)}`, { folder_id: target });
      await loadListing();
      return true;
    } },
  ]);
}

/** @param {Listing} listing */
export function renderEntries(listing) {
  const rows = [];
  for (const folder of listing.folders) {
    rows.push(el("tr", { "data-folder": folder.id },
      el("td", {}, el("button", { type: "button", class: "link", text: folder.name, onclick: () => {
        state.trail.push({ id: folder.id, name: folder.name });
        renderKbHeader();
        loadListing();
      } })),
      el("td", { text: t("folder"), class: "muted" }),
      el("td", { class: "size" }),
      el("td", { class: "acts" }, ...rowActions("folder", folder, listing))));
  }
  for (const file of listing.files) {
    const status = el("span", { class: `status ${file.status}`, text: t(file.status) });
    const cell = el("td", {}, status);
    if (file.status === "failed" && (file.reason || file.reason_code)) {
      cell.append(el("span", { class: "reason", "data-code": file.reason_code || "", text: reasonText(file) }));
    }
    cell.append(...fileNotes(file));  // versions.js: the version, a replace under way or failed
    const found = Boolean(state.found && state.found.file === file.id);
    rows.push(el("tr", { "data-file": file.id, class: found ? "found" : null, "aria-current": found ? "true" : null, tabindex: found ? -1 : null },
      el("td", { text: file.name }), cell, el("td", { class: "size", text: formatSize(file.size_bytes) }),
      el("td", { class: "acts" }, ...rowActions("file", file, listing))));
  }
  $("entries").replaceChildren(...rows);
  $("empty").hidden = rows.length > 0;
  showFound();
}

// The file an excerpt was opened for: its row brought into view and focused, once; a notice when the
// folder shown no longer holds it.
function showFound() {
  if (!state.found || state.found.shown) return;
  state.found.shown = true;
  /** @type {HTMLElement | null} */
  const row = document.querySelector(`#entries tr[data-file="${CSS.escape(state.found.file)}"]`);
  if (!row) { notice(t("fileGone")); return; }
  row.scrollIntoView({ block: "center" });
  row.focus({ preventScroll: true });
}
