// @ts-check
// Uploads into the open knowledge base's folder: three at a time, each row with its progress, the bytes
// straight to storage by the presigned POST the cloud hands out.
import { api, human, newKey, sendToStorage, seg } from "./api.js";
import { $, el } from "./dom.js";
import { formatSize } from "./format.js";
import { t } from "./i18n.js";
import { loadListing } from "./kb.js";
import { folderId, isOwner, state } from "./state.js";

/** @typedef {import("./state.js").KnowledgeBase} KnowledgeBase */

const UPLOAD_ROW_MS = 3000;  // how long a finished upload's row stays

/**
 * @param {KnowledgeBase} kb
 * @param {string | null} folder
 * @param {File} file
 */
async function uploadOne(kb, folder, file) {
  const progress = el("progress", { max: 1, value: 0, "aria-label": file.name });
  const percent = el("span", { class: "muted percent" });
  const note = el("span", { class: "muted", text: "" });
  const item = el("li", {}, el("span", {}, file.name, " ", percent, " ", note), progress);
  /** @param {number} fraction */
  const show = (fraction) => {
    progress.value = fraction;
    percent.textContent = t("uploadProgress", { percent: Math.floor(fraction * 100), size: formatSize(file.size) });
  };
  show(0);
  $("uploads").append(item);
  try {
    /** @type {{filename: string, size_bytes: number, folder_id?: string}} */
    const body = { filename: file.name, size_bytes: file.size };
    if (folder) body.folder_id = folder;
    const ticket = await api("POST", `/knowledge-bases/${seg(kb.id)}/uploads`, body, { "Idempotency-Key": newKey() });
    await sendToStorage(ticket, file, show);
    show(1);
    note.textContent = t("uploadDone");
    note.className = "ok";
    // Done: the file is in the list below now; its row here goes after a moment to read it.
    setTimeout(() => item.remove(), UPLOAD_ROW_MS);
  } catch (error) {
    note.textContent = t("uploadFailed", { reason: human(error) });
    note.className = "error";
  }
}

/** @param {File[]} files */
export async function uploadFiles(files) {
  const kb = state.kb;
  if (!kb || !isOwner() || !files.length) return;
  const folder = folderId();
  const queue = Array.from(files);
  const worker = async () => {
    while (queue.length) await uploadOne(kb, folder, /** @type {File} */ (queue.shift()));
  };
  const running = Promise.all([worker(), worker(), worker()]);
  await running;
  if (state.kb === kb) await loadListing();
}
