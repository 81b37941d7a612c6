// The knowledge bases: the lists, one KB's files and folders, uploads and sharing (see app.js).
"use strict";

// ------------------------------------------------------------------------------------------- lists

async function loadLists() {
  const answer = await api("GET", "/knowledge-bases");
  state.kbs = answer.items || [];
  state.kbsLoaded = true;
  renderLists();
  if (state.kb && !state.kbs.some((kb) => kb.id === state.kb.id)) closeKb(t("gone"));
  else if (state.kb) {
    state.kb = state.kbs.find((kb) => kb.id === state.kb.id);
    renderKbHeader();
  }
}

function recallSwitch(kb) {
  const button = el("button", {
    type: "button", role: "switch", "aria-checked": kb.recall ? "true" : "false",
    onclick: async () => {
      const enabled = button.getAttribute("aria-checked") !== "true";
      button.disabled = true;
      try {
        await api("PUT", `/knowledge-bases/${seg(kb.id)}/recall`, { enabled });
        kb.recall = enabled;
        button.setAttribute("aria-checked", enabled ? "true" : "false");
      } catch (error) {
        notice(human(error));
      } finally {
        button.disabled = false;
      }
    },
  }, el("span", { class: "track", "aria-hidden": "true" }), el("span", { text: t("recall") }));
  return button;
}

function kbItem(kb) {
  const owned = kb.role === "owner";
  const actions = el("div", { class: "actions" }, recallSwitch(kb));
  if (owned) {
    actions.append(
      el("button", { type: "button", text: t("rename"), onclick: () => askName(t("rename"), kb.name, async (name) => {
        await api("PATCH", `/knowledge-bases/${seg(kb.id)}`, { name });
        await loadLists();
      }) }),
      el("button", { type: "button", class: "danger", text: t("del"), onclick: () => confirmDanger(
        t("del"), t("confirmDeleteKb", { name: kb.name }), t("del"), async () => {
          await api("DELETE", `/knowledge-bases/${seg(kb.id)}`);
          if (state.kb && state.kb.id === kb.id) closeKb();
          await loadLists();
        }) }),
    );
  } else {
    actions.append(el("button", { type: "button", class: "danger", text: t("leave"), onclick: () => confirmDanger(
      t("leave"), t("confirmLeave", { name: kb.name }), t("leave"), async () => {
        await api("DELETE", `/knowledge-bases/${seg(kb.id)}/members/${seg(state.me.user_id)}`);
        if (state.kb && state.kb.id === kb.id) closeKb();
        await loadLists();
      }) }));
  }
  const item = el("li", { "data-kb": kb.id, class: state.kb && state.kb.id === kb.id ? "current" : "" },
    el("button", { type: "button", class: "link", text: kb.name, onclick: () => openKb(kb) }));
  if (!owned) {
    const owner = kb.owner || {};
    const contact = owner.contact ? [" · ", theirs(owner.contact)] : [];
    item.append(el("span", { class: "meta" }, `${t("sharedBy")}: `, theirs(owner.display_name || owner.user_id), ...contact));
  }
  const files = kb.file_count || 0;
  const stats = tn("kbStats", files, { files, size: formatSize(kb.bytes_used || 0) });
  item.append(el("span", { class: "meta stats", text: stats }), actions);
  return item;
}

function renderLists() {
  const mine = state.kbs.filter((kb) => kb.role === "owner");
  const shared = state.kbs.filter((kb) => kb.role !== "owner");
  $("mine").replaceChildren(...(mine.length ? mine.map(kbItem) : [el("li", { class: "muted", text: t("noKbs") })]));
  $("shared").replaceChildren(...(shared.length ? shared.map(kbItem) : [el("li", { class: "muted", text: t("noShared") })]));
  // A new user: what a knowledge base is, and the one button that starts one, where the open KB would be.
  // Neither button shows before the lists are known (index.html), so none moves once it can be clicked.
  const none = state.kbs.length === 0;
  $("welcome").hidden = !none || Boolean(state.kb);
  $("new-kb").hidden = none;
}

// ---------------------------------------------------------------------------------------- one KB

function isOwner() { return state.kb && state.kb.role === "owner"; }
function folderId() { return state.trail.length ? state.trail[state.trail.length - 1].id : null; }

// A KB opened at its root, or at ``target``'s folder (``trail``) with its file's row marked (ask.js).
function openKb(kb, target) {
  state.kb = kb;
  state.trail = target ? target.trail : [];
  state.found = target ? { file: target.file, shown: false } : null;
  state.listing = null;
  $("kb").hidden = false;
  $("welcome").hidden = true;
  $("uploads").replaceChildren();
  renderLists();
  renderKbHeader();
  loadListing();
  $("kb-heading").focus();
}

function closeKb(message) {
  clearTimeout(state.timer);
  state.kb = null;
  $("kb").hidden = true;
  renderLists();
  if (message) notice(message);
}

function renderKbHeader() {
  const kb = state.kb;
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

function formatSize(bytes) {
  if (bytes === null || bytes === undefined) return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

async function loadListing() {
  clearTimeout(state.timer);
  const kb = state.kb;
  if (!kb) return;
  const folder = folderId();
  let listing;
  try {
    listing = await api("GET", `/knowledge-bases/${seg(kb.id)}/files${folder ? `?folder_id=${encodeURIComponent(folder)}` : ""}`);
  } catch (error) {
    if (error.status === 404 || error.status === 403) {
      if (state.trail.length) { state.trail = []; renderKbHeader(); return loadListing(); }
      closeKb(t("gone"));
      await loadLists().catch(() => {});
      return;
    }
    notice(human(error));
    return;
  }
  if (state.kb !== kb || folderId() !== folder) return;  // navigated away meanwhile
  state.listing = listing;
  renderEntries(listing);
  // Files just finished (or failed): the KB's file count and storage in the lists change with them.
  if (state.busy && !listing.refresh_after_seconds) loadLists().catch(() => {});
  state.busy = Boolean(listing.refresh_after_seconds);
  if (listing.refresh_after_seconds) {
    state.timer = setTimeout(loadListing, Math.max(1, listing.refresh_after_seconds) * 1000);
  }
}

function rowActions(kind, entry, listing) {
  // A file still uploading, processing or failed is an upload, not yet a file (its id is the upload's):
  // the API moves and deletes files only.
  if (!isOwner()) return [];
  const kbPath = `/knowledge-bases/${seg(state.kb.id)}`;
  if (kind === "file" && entry.upload_id && entry.id === entry.upload_id) {
    if (entry.status !== "failed") return [];
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
  if (kind === "file") buttons.push(...versionActions(entry));  // sync.js
  buttons.push(el("button", { type: "button", text: t("move"), onclick: () => moveDialog(kind, entry, listing) }));
  // A linked folder's file: the question says that the folder wins (sync.js).
  const warning = kind === "file" ? deleteWarning(entry) : "";
  buttons.push(el("button", { type: "button", class: "danger", text: t("del"), onclick: () => confirmDanger(
    t("del"), t(kind === "folder" ? "confirmDeleteFolder" : "confirmDeleteFile", { name: entry.name }), t("del"), async () => {
      await api("DELETE", `${kbPath}/${kind === "folder" ? "folders" : "files"}/${seg(entry.id)}`);
      await loadListing();
    }, warning) }));
  return buttons;
}

function moveDialog(kind, entry, listing) {
  const select = el("select", { name: "target" });
  const here = folderId();
  const options = [];
  if (here !== null) options.push(["", t("rootFolder")]);
  if (state.trail.length > 1) options.push([state.trail[state.trail.length - 2].id, t("parentFolder")]);
  for (const folder of listing.folders) if (folder.id !== entry.id) options.push([folder.id, folder.name]);
  for (const [value, label] of options) select.append(el("option", { value, text: label }));
  if (!options.length) select.append(el("option", { value: "-", text: "—", disabled: true }));
  showDialog(`${t("move")}: ${entry.name}`, [el("label", {}, el("span", { text: t("moveTo") }), select)], [
    { label: t("move"), cls: "primary", run: async () => {
      if (select.value === "-") return false;
      const target = select.value || null;
      const kbPath = `/knowledge-bases/${seg(state.kb.id)}`;
      if (kind === "folder") await api("PATCH", `${kbPath}/folders/${seg(entry.id)}`, { parent_id: target });
      else await api("PATCH", `${kbPath}/files/${seg(entry.id)}`, { folder_id: target });
      await loadListing();
    } },
  ]);
}

function renderEntries(listing) {
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
    cell.append(...fileNotes(file));  // sync.js: the version, a replace under way or failed
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
  const row = document.querySelector(`#entries tr[data-file="${CSS.escape(state.found.file)}"]`);
  if (!row) { notice(t("fileGone")); return; }
  row.scrollIntoView({ block: "center" });
  row.focus({ preventScroll: true });
}

// ------------------------------------------------------------------------------------------ uploads

const UPLOAD_ROW_MS = 3000;  // how long a finished upload's row stays

function sendToStorage(ticket, file, progress) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const [key, value] of Object.entries(ticket.fields)) form.append(key, value);
    form.append("file", file, file.name);
    const request = new XMLHttpRequest();
    request.open("POST", ticket.url);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) progress(event.loaded / event.total);
    };
    request.onload = () => (request.status >= 200 && request.status < 300
      ? resolve() : reject(new Error(`storage answered ${request.status}`)));
    request.onerror = () => reject(new Error("storage could not be reached"));
    request.send(form);
  });
}

async function uploadOne(kb, folder, file) {
  const progress = el("progress", { max: 1, value: 0, "aria-label": file.name });
  const percent = el("span", { class: "muted percent" });
  const note = el("span", { class: "muted", text: "" });
  const item = el("li", {}, el("span", {}, file.name, " ", percent, " ", note), progress);
  const show = (fraction) => {
    progress.value = fraction;
    percent.textContent = t("uploadProgress", { percent: Math.floor(fraction * 100), size: formatSize(file.size) });
  };
  show(0);
  $("uploads").append(item);
  try {
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

async function uploadFiles(files) {
  const kb = state.kb;
  if (!kb || !isOwner() || !files.length) return;
  const folder = folderId();
  const queue = Array.from(files);
  const worker = async () => { while (queue.length) await uploadOne(kb, folder, queue.shift()); };
  const running = Promise.all([worker(), worker(), worker()]);
  await running;
  if (state.kb === kb) await loadListing();
}

// ------------------------------------------------------------------------------------------ sharing

async function shareDialog() {
  const kb = state.kb;
  const input = el("input", { id: "member-identifier", name: "identifier", maxlength: 320, autocomplete: "off" });
  const add = el("button", { type: "submit", class: "primary", text: t("add") });
  const list = el("ul", { class: "members", "aria-label": t("members") });
  const status = el("p", { class: "ok", role: "status" });
  const refresh = async () => {
    const members = (await api("GET", `/knowledge-bases/${seg(kb.id)}/members`)).items || [];
    const readers = members.filter((member) => member.role !== "owner");
    list.replaceChildren(...(readers.length ? readers.map((member) => el("li", { "data-member": member.user_id },
      el("span", {}, theirs(member.display_name), " (", theirs(member.user_id), ")"),
      el("button", { type: "button", class: "danger", text: t("remove"), "aria-label": `${t("remove")} ${member.display_name}`, onclick: async () => {
        try {
          await api("DELETE", `/knowledge-bases/${seg(kb.id)}/members/${seg(member.user_id)}`);
          await refresh();
        } catch (error) {
          $("dialog-error").textContent = human(error);
        }
      } }))) : [el("li", { class: "muted", text: t("noMembers") })]));
  };
  showDialog(`${t("share")}: ${kb.name}`, [
    el("label", { for: "member-identifier", text: t("memberLabel") }),
    el("div", { class: "row add-member" }, input, add),
    status,
    el("h3", { text: t("members") }), list,
  ], [
    { label: t("add"), node: add, run: async () => {
      status.textContent = "";
      const identifier = input.value.trim();
      if (!identifier) return false;
      const member = await api("POST", `/knowledge-bases/${seg(kb.id)}/members`, { identifier });
      input.value = "";
      status.textContent = t("added", { name: member.display_name });
      await refresh();
      return false;
    } },
  ], t("close"));
  try { await refresh(); } catch (error) { $("dialog-error").textContent = human(error); }
}
