// "Try a question": a recall as the agents' hook gets it, each excerpt with the document and knowledge base
// it came from, the document's name a link to its row in the KB's files (see app.js).
"use strict";

// ---------------------------------------------------------------------------------- try a question

// Where an excerpt came from: its knowledge base (and whose share), or the group of KBs searched together
// (each with whose share it is, for one shared with you); the nodes of one line, others' text in <bdi>.
function sourceOf(item) {
  const owner = (o) => (o ? [` · ${t("sharedBy")} `, theirs(o.name || ""), ...(o.contact ? [" (", theirs(o.contact), ")"] : [])] : []);
  if (item.knowledge_base) return [`${t("fromKb")} `, theirs(item.knowledge_base.name), ...owner(item.owner)];
  // A group's excerpt whose file is known comes from the one KB of the group the file is in.
  const home = isFile(item.file) && (item.knowledge_bases || []).find((kb) => kb.id === item.file.knowledge_base_id);
  if (home) return [`${t("fromKb")} `, theirs(home.name), ...owner(home.owner)];
  if (item.knowledge_bases && item.knowledge_bases.length) {
    const parts = [`${t("fromOneOf")} `];
    item.knowledge_bases.forEach((kb, index) => {
      if (index) parts.push(LANG === "zh" ? "；" : "; ");
      parts.push(theirs(kb.name), ...owner(kb.owner));
    });
    return parts;
  }
  return [];
}

// The document an excerpt comes from, as the cloud names it: ``file`` (the one file its text was found
// in) or ``files`` (the few that hold the same text); anything else names none.
const isFile = (file) => Boolean(file && typeof file.id === "string" && file.id && typeof file.name === "string" && file.name);
const filePath = (file) => (file.folder_path ? `${file.folder_path}/${file.name}` : file.name);

// The heading to cite after the file's name ("《handbook.md》 § Refunds"); none when it is the name again.
function sectionOf(title, file) {
  const heading = String(title ?? "").trim();
  const name = file.name.trim();
  const dot = name.lastIndexOf(".");
  return heading === name || heading === (dot > 0 ? name.slice(0, dot) : name) ? "" : heading;
}

// A file's name (or path) as a link that opens its row in its knowledge base's files.
function fileLink(file, label, kbId) {
  return el("button", { type: "button", class: "link file-link", title: t("openFile"), onclick: () => openFile(file, kbId) },
    theirs(label));
}

// An excerpt's heading: 《file》 § section for a known file, else the section's heading as MemOS keeps it.
function headingOf(item, kbId) {
  if (!isFile(item.file)) return el("h3", {}, "《", theirs(item.title), "》");
  const section = sectionOf(item.title, item.file);
  return el("h3", {}, "《", fileLink(item.file, item.file.name, kbId), "》", ...(section ? [" § ", theirs(section)] : []));
}

// Where in its knowledge base the excerpt's file is, or the files it may come from (each a link).
function documentOf(item, kbId) {
  if (isFile(item.file)) return item.file.folder_path ? [`${t("inFolder")} `, theirs(item.file.folder_path)] : [];
  const candidates = (item.files || []).filter(isFile);
  if (!candidates.length) return [];
  const parts = [`${t("fromOneOfFiles")} `];
  candidates.forEach((file, index) => {
    if (index) parts.push(LANG === "zh" ? "；" : "; ");
    parts.push(fileLink(file, filePath(file), file.knowledge_base_id || kbId));
  });
  return parts;
}

// An excerpt's file shown where it is: its knowledge base opened at the file's folder, its row marked and
// scrolled into view. The cloud is asked where the file is now (it may have moved since the search);
// the trail of folders to it is found by the names the excerpt gave, level by level.
async function openFile(file, kbId) {
  const kb = state.kbs.find((candidate) => candidate.id === kbId);
  if (!kb) { notice(t("fileGone")); return; }
  let trail;
  try {
    const current = await api("GET", `/knowledge-bases/${seg(kb.id)}/files/${seg(file.id)}`);
    trail = await trailTo(kb, current.folder_id || null, file.folder_path || "");
  } catch (error) {
    notice(error.status === 404 || error.status === 403 ? t("fileGone") : human(error));
    return;
  }
  notice("");
  openKb(kb, { trail, file: file.id });
}

async function trailTo(kb, folderId, path) {
  if (!folderId) return [];
  const trail = [];
  for (const name of path.split("/").filter(Boolean)) {
    const parent = trail.length ? trail[trail.length - 1].id : null;
    const listing = await api("GET", `/knowledge-bases/${seg(kb.id)}/files${parent ? `?folder_id=${encodeURIComponent(parent)}` : ""}`);
    const folder = (listing.folders || []).find((candidate) => candidate.name === name);
    if (!folder) break;
    trail.push({ id: folder.id, name: folder.name });
  }
  if (trail.length && trail[trail.length - 1].id === folderId) return trail;
  // Moved or renamed since the search: the folder it is in now, without the names above it.
  return [{ id: folderId, name: "…" }];
}

async function ask(query) {
  const answer = $("answer");
  answer.replaceChildren(el("p", { class: "muted", text: "…" }));
  try {
    state.answer = { result: await api("POST", "/recall", { query }) };
  } catch (error) {
    state.answer = { error };
  }
  renderAnswer();
}

// Why nothing came back: no KB in recall at all (and how to get one), or nothing in them matched.
function nothingFound(result) {
  if (result.scope_size) return t("nothing");
  return t(state.kbs.length ? "noneInRecall" : "noKbsToAsk");
}

function renderAnswer() {
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
