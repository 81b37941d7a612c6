// @ts-check
// A file's versions on the page: its version and a replace under way or failed beside its status, and
// replacing it in place (its SHA-256 computed here, sent with the version shown, the bytes straight to
// storage). A linked folder's file says that the folder wins.
import { ApiError, api, human, newKey, sendToStorage, seg } from "./api.js";
import { showDialog } from "./dialog.js";
import { $, el, notice, theirs } from "./dom.js";
import { formatSize } from "./format.js";
import { reasonText, t } from "./i18n.js";
import { state } from "./state.js";

/** @typedef {import("./state.js").FileEntry} FileEntry */
/** @typedef {import("./state.js").KnowledgeBase} KnowledgeBase */
/** @typedef {() => Promise<void>} Reload the open KB's files read again (kb.js loadListing) */

/**
 * What the file row shows beside the status: the version, and a replace under way or failed.
 * @param {FileEntry} file
 * @returns {HTMLElement[]}
 */
export function fileNotes(file) {
  const notes = [];
  if (file.origin === "sync") {
    const link = linkOf(file);
    // The folder by its own name here (its whole path on hover and in the warnings), once per row.
    const name = link ? link.dir.replace(/\/+$/, "").split("/").pop() || link.dir : "";
    notes.push(el("span", { class: "synced", title: link ? link.dir : null, text: link ? t("syncedFrom", { dir: name }) : t("syncedMark") }));
  }
  if (file.version) notes.push(el("span", { class: "version muted", text: t("version", { n: file.version }) }));
  const replacement = file.replacement;
  if (replacement && replacement.status === "uploading") {
    notes.push(el("span", { class: "replacing", text: t("replacing") }));
  } else if (replacement && replacement.status === "failed") {
    notes.push(el("span", { class: "reason", "data-code": replacement.reason_code || "", text: t("replaceFailed", { reason: reasonText(replacement) }) }));
  }
  return notes;
}

/**
 * The owner's actions on a file for its versions: Replace, and Dismiss for a failed replace.
 * @param {FileEntry} file
 * @param {Reload} reload
 * @returns {HTMLElement[]}
 */
export function versionActions(file, reload) {
  const replace = () => {
    const link = linkOf(file);
    if (!link) { pickReplacement(file, reload); return; }
    showDialog(t("replace"), [el("p", { class: "warn", text: t("folderWins", { name: file.name, dir: link.dir }) })],
      [{ label: t("replaceAnyway"), run: () => pickReplacement(file, reload) }]);
  };
  const buttons = [el("button", { type: "button", text: t("replace"), "aria-label": t("replaceOne", { name: file.name }), onclick: replace })];
  const replacement = file.replacement;
  if (replacement && replacement.status === "failed") {
    buttons.push(el("button", { type: "button", text: t("dismiss"), "aria-label": t("dismissReplace", { name: file.name }), onclick: async () => {
      try {
        await api("DELETE", `/knowledge-bases/${seg(/** @type {KnowledgeBase} */ (state.kb).id)}/uploads/${seg(replacement.upload_id)}`);
      } catch (error) {
        notice(human(error));
      }
      await reload();
    } }));
  }
  return buttons;
}

/**
 * The linked folder a file of the open KB came from: a synced file while a folder is linked to its KB.
 * @param {FileEntry} file
 */
export function linkOf(file) {
  const kb = state.kb;
  if (file.origin !== "sync" || !kb) return null;
  return (state.links || []).find((link) => link.kb_id === kb.id) || null;
}

/**
 * What deleting a file on the page adds to its question: for a linked folder's file, that the folder wins.
 * @param {FileEntry} file
 */
export function deleteWarning(file) {
  const link = linkOf(file);
  return link ? t("folderWins", { name: file.name, dir: link.dir }) : "";
}

/**
 * @param {FileEntry} file
 * @param {Reload} reload
 */
function pickReplacement(file, reload) {
  const input = el("input", { type: "file", hidden: true });
  input.addEventListener("change", () => {
    const chosen = input.files && input.files[0];
    input.remove();
    if (chosen) replaceWith(/** @type {KnowledgeBase} */ (state.kb), file, chosen, reload);
  });
  document.body.append(input);
  input.click();
}

/** @param {Blob} blob */
async function sha256Of(blob) {
  const digest = await crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The replace as the sentence the owner reads: the two 409s and any other refusal, in the page's language.
 * @param {unknown} error
 * @returns {string}
 */
export function replaceRefusal(error) {
  if (!(error instanceof ApiError)) return human(error);
  const version = error.details && error.details.version;
  if (error.code === "version_conflict") return t("err_version_conflict", { version: version ?? "?" });
  if (error.code === "replace_in_progress") return t("err_replace_in_progress");
  return human(error);
}

/**
 * @param {KnowledgeBase} kb
 * @param {FileEntry} file
 * @param {File} chosen
 * @param {Reload} reload
 */
async function replaceWith(kb, file, chosen, reload) {
  const progress = el("progress", { max: 1, value: 0, "aria-label": `${t("replace")}: ${file.name}` });
  const percent = el("span", { class: "muted percent" });
  const note = el("span", { class: "muted", text: "" });
  const item = el("li", { "data-replace": file.id }, el("span", {}, `${t("replace")}: `, theirs(file.name), " ", percent, " ", note), progress);
  /** @param {number} fraction */
  const show = (fraction) => {
    progress.value = fraction;
    percent.textContent = t("uploadProgress", { percent: Math.floor(fraction * 100), size: formatSize(chosen.size) });
  };
  show(0);
  $("uploads").append(item);
  try {
    const body = { size_bytes: chosen.size, sha256: await sha256Of(chosen), if_version: file.version };
    const path = `/knowledge-bases/${seg(kb.id)}/files/${seg(file.id)}/replacements`;
    const answer = await api("POST", path, body, { "Idempotency-Key": newKey() });
    if (answer.status === "unchanged") {
      progress.remove();
      percent.textContent = "";
      note.textContent = t("replaceUnchanged", { name: file.name, version: answer.version });
    } else {
      await sendToStorage(answer, chosen, show);
      show(1);
      note.textContent = t("replaceSent");
      note.className = "ok";
    }
  } catch (error) {
    progress.remove();
    note.textContent = replaceRefusal(error);
    note.className = "error";
  }
  if (state.kb === kb) await reload();
}
