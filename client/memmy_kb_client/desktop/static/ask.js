// @ts-check
// "Try a question": a recall as the agents' hook gets it, each excerpt with the document and knowledge base
// it came from, the document's name a link to its row in the KB's files.
import { ApiError, api, human, seg } from "./api.js";
import { $, el, notice, theirs } from "./dom.js";
import { filePath, isFile, sectionOf } from "./format.js";
import { language, t, tn } from "./i18n.js";
import { openKb } from "./kb.js";
import { state } from "./state.js";

/** @typedef {import("./format.js").ExcerptFile} ExcerptFile */
/** @typedef {{name?: string, contact?: string}} Sharer */
/** @typedef {{id: string, name: string}} ExcerptTeam */
/** @typedef {{id: string, name: string, owner?: Sharer, team?: ExcerptTeam | null}} ExcerptKb */
/**
 * @typedef {object} Excerpt
 * @property {string} [title]
 * @property {string} content
 * @property {unknown} [file]
 * @property {unknown[]} [files]
 * @property {ExcerptKb} [knowledge_base]
 * @property {Sharer} [owner]
 * @property {ExcerptKb[]} [knowledge_bases]
 * @property {ExcerptTeam | null} [team] the team through which the person reads its KB (no direct share)
 */
/** @typedef {{items: Excerpt[], scope_size?: number, context?: string}} Recalled */

/** @param {Sharer | undefined} o */
const ownerOf = (o) => (o ? [` · ${t("sharedBy")} `, theirs(o.name || ""), ...(o.contact ? [" (", theirs(o.contact), ")"] : [])] : []);
/** @param {ExcerptTeam | null | undefined} team */
const teamOf = (team) => (team ? [` · ${t("throughTeam")} `, theirs(team.name)] : []);

/**
 * Where an excerpt came from: its knowledge base (and whose share), or the group of KBs searched together
 * (each with whose share it is, for one shared with you); the nodes of one line, others' text in <bdi>.
 * @param {Excerpt} item
 * @returns {(Node | string)[]}
 */
function sourceOf(item) {
  if (item.knowledge_base) return [`${t("fromKb")} `, theirs(item.knowledge_base.name), ...ownerOf(item.owner), ...teamOf(item.team)];
  // A group's excerpt whose file is known comes from the one KB of the group the file is in.
  const file = item.file;
  const home = isFile(file) && (item.knowledge_bases || []).find((kb) => kb.id === file.knowledge_base_id);
  if (home) return [`${t("fromKb")} `, theirs(home.name), ...ownerOf(home.owner), ...teamOf(home.team)];
  if (item.knowledge_bases && item.knowledge_bases.length) {
    /** @type {(Node | string)[]} */
    const parts = [`${t("fromOneOf")} `];
    item.knowledge_bases.forEach((kb, index) => {
      if (index) parts.push(language() === "zh" ? "；" : "; ");
      parts.push(theirs(kb.name), ...ownerOf(kb.owner), ...teamOf(kb.team));
    });
    return parts;
  }
  return [];
}

/**
 * A file's name (or path) as a link that opens its row in its knowledge base's files.
 * @param {ExcerptFile} file
 * @param {string} label
 * @param {string | undefined} kbId
 */
function fileLink(file, label, kbId) {
  return el("button", { type: "button", class: "link file-link", title: t("openFile"), onclick: () => openFile(file, kbId) },
    theirs(label));
}

/**
 * An excerpt's heading: 《file》 § section for a known file, else the section's heading as MemOS keeps it.
 * @param {Excerpt} item
 * @param {string | undefined} kbId
 */
function headingOf(item, kbId) {
  if (!isFile(item.file)) return el("h3", {}, "《", theirs(item.title), "》");
  const section = sectionOf(item.title, item.file);
  return el("h3", {}, "《", fileLink(item.file, item.file.name, kbId), "》", ...(section ? [" § ", theirs(section)] : []));
}

/**
 * Where in its knowledge base the excerpt's file is, or the files it may come from (each a link).
 * @param {Excerpt} item
 * @param {string | undefined} kbId
 * @returns {(Node | string)[]}
 */
function documentOf(item, kbId) {
  if (isFile(item.file)) return item.file.folder_path ? [`${t("inFolder")} `, theirs(item.file.folder_path)] : [];
  const candidates = (item.files || []).filter(isFile);
  if (!candidates.length) return [];
  /** @type {(Node | string)[]} */
  const parts = [`${t("fromOneOfFiles")} `];
  candidates.forEach((file, index) => {
    if (index) parts.push(language() === "zh" ? "；" : "; ");
    parts.push(fileLink(file, filePath(file), file.knowledge_base_id || kbId));
  });
  return parts;
}

/**
 * An excerpt's file shown where it is: its knowledge base opened at the file's folder, its row marked and
 * scrolled into view. The cloud is asked where the file is now (it may have moved since the search);
 * the trail of folders to it is found by the names the excerpt gave, level by level.
 * @param {ExcerptFile} file
 * @param {string | undefined} kbId
 */
async function openFile(file, kbId) {
  const kb = state.kbs.find((candidate) => candidate.id === kbId);
  if (!kb) { notice(t("fileGone")); return; }
  let trail;
  try {
    const current = await api("GET", `/knowledge-bases/${seg(kb.id)}/files/${seg(file.id)}`);
    trail = await trailTo(kb, current.folder_id || null, file.folder_path || "");
  } catch (error) {
    const gone = error instanceof ApiError && (error.status === 404 || error.status === 403);
    notice(gone ? t("fileGone") : human(error));
    return;
  }
  notice("");
  openKb(kb, { trail, file: file.id });
}

/**
 * @param {import("./state.js").KnowledgeBase} kb
 * @param {string | null} folderId
 * @param {string} path
 * @returns {Promise<import("./state.js").Crumb[]>}
 */
async function trailTo(kb, folderId, path) {
  if (!folderId) return [];
  /** @type {{id: string, name: string}[]} */
  const trail = [];
  for (const name of path.split("/").filter(Boolean)) {
    const parent = trail.length ? trail[trail.length - 1].id : null;
    const listing = await api("GET", `/knowledge-bases/${seg(kb.id)}/files${parent ? `?folder_id=${encodeURIComponent(parent)}` : ""}`);
    /** @type {import("./state.js").FolderEntry | undefined} */
    const folder = (listing.folders || []).find((/** @type {import("./state.js").FolderEntry} */ candidate) => candidate.name === name);
    if (!folder) break;
    trail.push({ id: folder.id, name: folder.name });
  }
  if (trail.length && trail[trail.length - 1].id === folderId) return trail;
  // Moved or renamed since the search: the folder it is in now, without the names above it.
  return [{ id: folderId, name: "…" }];
}

/** @param {string} query */
export async function ask(query) {
  const answer = $("answer");
  answer.replaceChildren(el("p", { class: "muted", text: "…" }));
  try {
    state.answer = { result: await api("POST", "/recall", { query }) };
  } catch (error) {
    state.answer = { error };
  }
  renderAnswer();
}

/**
 * Why nothing came back: no KB in recall at all (and how to get one), or nothing in them matched.
 * @param {Recalled} result
 */
function nothingFound(result) {
  if (result.scope_size) return t("nothing");
  return t(state.kbs.length ? "noneInRecall" : "noKbsToAsk");
}

export function renderAnswer() {
  /** @type {{result?: Recalled, error?: unknown}} */
  const { result, error } = state.answer || {};
  if (error) {
    $("answer").replaceChildren(el("p", { class: "error", role: "alert", text: human(error) }));
    return;
  }
  if (!result) return;
  const parts = [];
  if (result.scope_size) parts.push(el("p", { class: "muted", text: tn("scope", result.scope_size) }));
  if (!result.items.length) parts.push(el("p", { class: "nothing", text: nothingFound(result) }));
  else {
    parts.push(el("h3", { text: t("excerpts") }));
    for (const item of result.items) {
      const kbId = (isFile(item.file) && item.file.knowledge_base_id) || (item.knowledge_base || {}).id;
      const where = documentOf(item, kbId);
      parts.push(el("article", { class: "excerpt" }, headingOf(item, kbId),
        where.length ? el("p", { class: "file muted" }, ...where) : null,
        el("p", { class: "source muted" }, ...sourceOf(item)), el("p", { class: "text", text: item.content })));
    }
  }
  if (result.context) {
    parts.push(el("details", {}, el("summary", { text: t("block") }), el("pre", { text: result.context })));
  }
  $("answer").replaceChildren(...parts);
}
