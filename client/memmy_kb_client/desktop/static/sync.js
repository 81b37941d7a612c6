// Knowledge that changes, on the page: replacing a file in place (its SHA-256 computed here, sent with the
// version shown, the bytes straight to storage), each file's version and replace, and the desktop's linked
// folders with their state. Loaded after app.js, whose helpers (api, el, t, state, seg...) it uses.
"use strict";

Object.assign(TEXT.zh, {
  replace: "替换", replaceOne: "替换 {name}", version: "版本 {n}",
  replaceUnchanged: "「{name}」已经是这个内容（版本 {version}），无需发送。",
  err_version_conflict: "这个文件在此期间被改过（现在是版本 {version}）：请先看一下最新内容，再替换。",
  err_replace_in_progress: "这个文件正在被替换：请等这次替换完成后再试。",
  replacing: "替换中：新版本就绪前，仍由上一个版本回答。", replaceFailed: "替换失败：{reason}",
  replaceSent: "新版本已发送", dismissReplace: "清除 {name} 的失败替换",
  links: "同步的文件夹", unlink: "取消同步", confirmDelete: "确认删除", lastSync: "上次同步 {time}",
  link_waiting: "有待同步的更改", link_syncing: "同步中…", link_idle: "已同步", link_partly: "已同步，下列文件除外", link_paused: "已暂停：{reason}。确认后才会删除。",
  link_error: "出错：{error}", pausedEmpty: "文件夹是空的", pausedMissing: "文件夹不存在（磁盘未挂载？）",
  pausedMany: "将删除此文件夹同步进来的 {total} 个文件中的 {n} 个", pausedSince: "，自上次确认以来共 {n}/{total} 个",
  linkFailed: "处理失败：{path}（{reason}）仍由上一个版本回答。", waitRoom: "{n} 个文件在等知识库腾出空间",
  deletedSince: "自上次确认以来已删除 {n}/{total} 个同步进来的文件", linksUnreadable: "无法读取同步的文件夹：{error}", unlinked: "已取消同步 {dir}；知识库中的文件保留。",
  confirmUnlink: "不再同步「{dir}」？知识库中的文件会保留。",
  lastPaused: "将删除 {n} 个——等待你的确认", confirmDeleteTitle: "从「{kb}」删除 {n} 个文件？",
  confirmDeleteBody: "这些文件已不在 {dir} 中，文件夹的同步将把它们从知识库「{kb}」删除：", andMore: "……还有 {n} 个",
  deleteN: "删除 {n} 个文件", missingAdvice: "请重新连接磁盘或把文件夹放回原处，同步会自动继续；或者“取消同步”（知识库中的文件会保留）。只有当这些文件也应从知识库删除时，才确认删除。",
  kbGone: "它的知识库已不存在：把这个文件夹同步到另一个知识库，或取消同步。", relink: "同步到另一个知识库",
  relinkTo: "同步到", relinked: "{dir} 现在同步到「{kb}」。", noOtherKb: "你还没有别的知识库：先新建一个。",
  syncedFrom: "来自同步的文件夹「{dir}」", syncedMark: "来自同步的文件夹",
  folderWins: "「{name}」来自同步的文件夹 {dir}：同步期间以文件夹为准，下一次同步会把文件夹里的版本放回来。请在文件夹里修改这个文件。",
  replaceAnyway: "仍然替换",
});
Object.assign(TEXT.en, {
  replace: "Replace", replaceOne: "Replace {name}", version: "version {n}",
  replaceUnchanged: "“{name}” has this content already (version {version}): nothing to send.",
  err_version_conflict: "The file changed meanwhile (it is now version {version}): look at it again before replacing it.",
  err_replace_in_progress: "This file is already being replaced: try again once that replacement is done.",
  replacing: "Being replaced: the previous version answers until the new one is ready.",
  replaceFailed: "Replacement failed: {reason}", replaceSent: "New version sent",
  dismissReplace: "Dismiss the failed replacement of {name}",
  links: "Synced folders", unlink: "Stop syncing", confirmDelete: "Confirm deletion", lastSync: "last sync {time}",
  link_waiting: "Changes pending", link_syncing: "Syncing…", link_idle: "Up to date", link_partly: "Up to date but for the files below",
  link_paused: "Paused: {reason}. Nothing is deleted until you confirm.", link_error: "Error: {error}",
  pausedEmpty: "the folder is empty", pausedMissing: "the folder is missing (an unmounted disk?)",
  pausedMany: "it would delete {n} of the {total} files this folder's sync brought in",
  pausedSince: ", {n} of {total} since the last confirmation",
  linkFailed: "Failed: {path} ({reason})", waitRoom: "{n} file(s) wait for room in the knowledge base",
  deletedSince: "{n} of the {total} files its sync brought in deleted since the last confirmation",
  linksUnreadable: "The synced folders could not be read: {error}",
  unlinked: "Stopped syncing {dir}; its files stay in the knowledge base.",
  confirmUnlink: "Stop syncing “{dir}”? Its files stay in the knowledge base.",
  lastPaused: "would delete {n} — waiting for your confirmation", confirmDeleteTitle: "Delete {n} files from “{kb}”?",
  confirmDeleteTitleOne: "Delete 1 file from “{kb}”?",
  confirmDeleteBody: "These files are no longer in {dir}; the folder's sync would delete them from the knowledge base “{kb}”:",
  andMore: "… and {n} more", deleteN: "Delete {n} files", deleteNOne: "Delete 1 file",
  missingAdvice: "Reconnect the disk or put the folder back and its sync resumes, or choose Stop syncing (its files stay in the knowledge base). Confirm the deletion only if these files should go from the knowledge base too.",
  kbGone: "Its knowledge base is gone: link the folder to another knowledge base, or stop syncing it.",
  relink: "Link to another knowledge base", relinkTo: "Sync into", relinked: "{dir} now syncs into “{kb}”.",
  noOtherKb: "You have no other knowledge base: create one first.",
  syncedFrom: "From the synced folder “{dir}”", syncedMark: "From a synced folder",
  folderWins: "“{name}” comes from the synced folder {dir}: while it is linked, the folder wins, and its next pass puts the folder's version back. Change the file in the folder instead.",
  replaceAnyway: "Replace anyway",
});

// ---------------------------------------------------------------------------------- a file's versions

// What the file row shows beside the status: the version, and a replace under way or failed.
function fileNotes(file) {
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

// The owner's actions on a file for its versions: Replace, and Dismiss for a failed replace.
function versionActions(file) {
  const replace = () => {
    const link = linkOf(file);
    if (!link) { pickReplacement(file); return; }
    showDialog(t("replace"), [el("p", { class: "warn", text: t("folderWins", { name: file.name, dir: link.dir }) })],
      [{ label: t("replaceAnyway"), run: () => pickReplacement(file) }]);
  };
  const buttons = [el("button", { type: "button", text: t("replace"), "aria-label": t("replaceOne", { name: file.name }), onclick: replace })];
  if (file.replacement && file.replacement.status === "failed") {
    buttons.push(el("button", { type: "button", text: t("dismiss"), "aria-label": t("dismissReplace", { name: file.name }), onclick: async () => {
      try {
        await api("DELETE", `/knowledge-bases/${seg(state.kb.id)}/uploads/${seg(file.replacement.upload_id)}`);
      } catch (error) {
        notice(human(error));
      }
      await loadListing();
    } }));
  }
  return buttons;
}

// The linked folder a file of the open KB came from: a synced file while a folder is linked to its KB.
function linkOf(file) {
  if (file.origin !== "sync" || !state.kb) return null;
  return (state.links || []).find((link) => link.kb_id === state.kb.id) || null;
}

// What deleting a file on the page adds to its question: for a linked folder's file, that the folder wins.
function deleteWarning(file) {
  const link = linkOf(file);
  return link ? t("folderWins", { name: file.name, dir: link.dir }) : "";
}

function pickReplacement(file) {
  const input = el("input", { type: "file", hidden: true });
  input.addEventListener("change", () => {
    const chosen = input.files && input.files[0];
    input.remove();
    if (chosen) replaceWith(state.kb, file, chosen);
  });
  document.body.append(input);
  input.click();
}

async function sha256Of(blob) {
  const digest = await crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// The replace as the sentence the owner reads: the two 409s and any other refusal, in the page's language.
function replaceRefusal(error) {
  const version = error.details && error.details.version;
  if (error.code === "version_conflict") return t("err_version_conflict", { version: version ?? "?" });
  if (error.code === "replace_in_progress") return t("err_replace_in_progress");
  return human(error);
}

async function replaceWith(kb, file, chosen) {
  const progress = el("progress", { max: 1, value: 0, "aria-label": `${t("replace")}: ${file.name}` });
  const percent = el("span", { class: "muted percent" });
  const note = el("span", { class: "muted", text: "" });
  const item = el("li", { "data-replace": file.id }, el("span", {}, `${t("replace")}: `, theirs(file.name), " ", percent, " ", note), progress);
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
  if (state.kb === kb) await loadListing();
}

// --------------------------------------------------------------------------------- linked folders

function pausedReason(text) {
  if (!text) return "";
  if (text.startsWith("the folder is empty")) return t("pausedEmpty");
  if (text.startsWith("the folder is missing")) return t("pausedMissing");
  const many = /delete (\d+) of the (\d+) files/.exec(text);
  const since = /, (\d+) of (\d+) since the last confirmation/.exec(text);
  if (!many) return text;
  return t("pausedMany", { n: many[1], total: many[2] }) + (since ? t("pausedSince", { n: since[1], total: since[2] }) : "");
}

// What the last pass has to tell beyond the state: failed versions, files waiting for room, the deletions
// counted since the last confirmation.
function linkNotes(link) {
  const notes = (link.failed || []).map((f) => el("div", { class: "reason", text: t("linkFailed", { path: f.path, reason: f.reason }) }));
  if (link.wait_for_room) notes.push(el("div", { class: "reason", text: t("waitRoom", { n: link.wait_for_room }) }));
  if (link.deleted_since_confirmation) {
    notes.push(el("div", { class: "muted", text: t("deletedSince", { n: link.deleted_since_confirmation, total: link.brought_in }) }));
  }
  return notes;
}

// The link's KB among the person's own, or null: deleted, or none of theirs any more.
function kbOfLink(link) {
  return state.kbs.find((item) => item.id === link.kb_id && item.role === "owner") || null;
}

function linkItem(link) {
  if (link.state === "unreadable") {
    return el("li", { "data-link": "", class: "link-error" }, el("div", { class: "link-state error", text: t("linksUnreadable", { error: link.error || "" }) }));
  }
  const kb = kbOfLink(link);
  const gone = !kb && Boolean(state.kbsLoaded);
  const missing = link.state === "paused" && (link.paused || "").startsWith("the folder is missing");
  const last = link.last || {};
  const deleting = (last.counts || {}).delete || 0;
  const words = gone ? t("kbGone")
    : link.state === "paused" ? t("link_paused", { reason: pausedReason(link.paused) })
      : link.state === "error" ? t("link_error", { error: link.error || "" })
        : link.state === "idle" && ((link.failed || []).length || link.wait_for_room) ? t("link_partly") : t(`link_${link.state}`);
  const time = (at) => new Date(at * 1000).toLocaleTimeString(LANG === "en" ? "en" : "zh-CN");
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
  buttons.push(...(missing ? [unlink, confirm] : [confirm, unlink]).filter(Boolean));
  return el("li", { "data-link": link.dir, class: `link-${link.state}` },
    el("div", {}, el("code", { text: link.dir }), " → ", theirs(kb ? kb.name : link.kb_id)),
    ...lines, ...linkNotes(link), el("div", { class: "row" }, ...buttons));
}

// "Confirm deletion": asked first, with how many files go and the first of their names.
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
  $("dialog-buttons").lastElementChild.focus();  // Cancel: Enter alone deletes nothing
}

// A link whose KB is gone, pointed at another of the person's own KBs (the same folder, synced anew).
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

async function linkAction(action, link) {
  try {
    await api("POST", `/links/${action}`, { dir: link.dir });
  } catch (error) {
    notice(human(error));
  }
  await loadLinks();
}

async function loadLinks() {
  clearTimeout(state.linksTimer);
  let links = [];
  try {
    links = (await api("GET", "/links")).links || [];
  } catch (_) {
    return;  // an older service without linked folders: nothing to show
  }
  let section = $("links");
  if (!section) {
    section = el("section", { id: "links", class: "linked", "aria-labelledby": "links-heading" },
      el("h2", { id: "links-heading", text: t("links") }), el("ul", { id: "link-list", class: "links" }));
    $("lists").append(section);
  }
  // A link in error may be one whose KB was deleted meanwhile: the lists read again tell.
  if (links.some((l) => l.state === "error" && kbOfLink(l))) await loadLists().catch(() => {});
  const linked = (l) => `${l.kb_id}\u0000${l.dir}`;
  const before = (state.links || []).map(linked).join("\n");
  state.links = links;
  section.hidden = !links.length;
  $("link-list").replaceChildren(...links.map(linkItem));
  // A folder linked or unlinked: the open KB's files marked (or no longer) as its.
  if (state.listing && before !== links.map(linked).join("\n")) renderEntries(state.listing);
  // A pass that just ran changed a KB: its file count, and its files if it is the one open.
  const passes = Object.fromEntries(links.map((l) => [l.dir, l.last_pass_at]));
  const moved = links.filter((l) => state.linkPasses && l.last_pass_at && state.linkPasses[l.dir] !== l.last_pass_at);
  state.linkPasses = passes;
  if (moved.length) {
    // One after the other: loadLists swaps state.kb for the fresh one, which a listing under way would
    // take for the owner having opened another KB meanwhile.
    const open = state.kb && moved.some((l) => l.kb_id === state.kb.id);
    loadLists().catch(() => {}).then(() => (open ? loadListing() : undefined));
  }
  state.linksTimer = setTimeout(loadLinks, links.some((l) => l.state === "syncing" || l.state === "waiting") ? 2000 : 10000);
}
