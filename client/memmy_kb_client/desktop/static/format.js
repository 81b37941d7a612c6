// @ts-check
// Values as the page shows them: sizes, a linked folder's pause, an excerpt's document and section.
import { t } from "./i18n.js";

/**
 * @param {number | null | undefined} bytes
 * @returns {string}
 */
export function formatSize(bytes) {
  if (bytes === null || bytes === undefined) return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Why a linked folder's pass paused, in the page's language (the service says it in English).
 * @param {string | undefined} text
 * @returns {string}
 */
export function pausedReason(text) {
  if (!text) return "";
  if (text.startsWith("the folder is empty")) return t("pausedEmpty");
  if (text.startsWith("the folder is missing")) return t("pausedMissing");
  const many = /delete (\d+) of the (\d+) files/.exec(text);
  const since = /, (\d+) of (\d+) since the last confirmation/.exec(text);
  if (!many) return text;
  return t("pausedMany", { n: many[1], total: many[2] }) + (since ? t("pausedSince", { n: since[1], total: since[2] }) : "");
}

/** @typedef {{id: string, name: string, folder_path?: string, knowledge_base_id?: string}} ExcerptFile */

/**
 * The document an excerpt comes from, as the cloud names it: ``file`` (the one file its text was found
 * in) or ``files`` (the few that hold the same text); anything else names none.
 * @param {any} file
 * @returns {file is ExcerptFile}
 */
export const isFile = (file) => Boolean(file && typeof file.id === "string" && file.id && typeof file.name === "string" && file.name);

/** @param {ExcerptFile} file */
export const filePath = (file) => (file.folder_path ? `${file.folder_path}/${file.name}` : file.name);

/**
 * The heading to cite after the file's name ("《handbook.md》 § Refunds"); none when it is the name again.
 * @param {unknown} title
 * @param {ExcerptFile} file
 * @returns {string}
 */
export function sectionOf(title, file) {
  const heading = String(title ?? "").trim();
  const name = file.name.trim();
  const dot = name.lastIndexOf(".");
  return heading === name || heading === (dot > 0 ? name.slice(0, dot) : name) ? "" : heading;
}
