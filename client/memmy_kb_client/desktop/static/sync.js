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
});

// ---------------------------------------------------------------------------------- a file's versions

// What the file row shows beside the status: the version, and a replace under way or failed.
function fileNotes(file) {
  const notes = [];
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
  const buttons = [el("button", { type: "button", text: t("replace"), "aria-label": t("replaceOne", { name: file.name }), onclick: () => pickReplacement(file) })];
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

function linkItem(link) {
  if (link.state === "unreadable") {
    return el("li", { "data-link": "", class: "link-error" }, el("div", { class: "link-state error", text: t("linksUnreadable", { error: link.error || "" }) }));
  }
  const kb = state.kbs.find((item) => item.id === link.kb_id);
  const words = link.state === "paused" ? t("link_paused", { reason: pausedReason(link.paused) })
    : link.state === "error" ? t("link_error", { error: link.error || "" })
    : link.state === "idle" && ((link.failed || []).length || link.wait_for_room) ? t("link_partly") : t(`link_${link.state}`);
  const when = link.last_pass_at ? ` · ${t("lastSync", { time: new Date(link.last_pass_at * 1000).toLocaleTimeString(LANG === "en" ? "en" : "zh-CN") })}` : "";
  const buttons = [];
  if (link.state === "paused") {
    buttons.push(el("button", { type: "button", class: "danger", text: t("confirmDelete"), onclick: () => linkAction("confirm", link) }));
  }
  buttons.push(el("button", { type: "button", class: "quiet", text: t("unlink"), onclick: () => confirmDanger(
    t("unlink"), t("confirmUnlink", { dir: link.dir }), t("unlink"), async () => {
      await linkAction("unlink", link);
      notice(t("unlinked", { dir: link.dir }));
    }) }));
  return el("li", { "data-link": link.dir, class: `link-${link.state}` },
    el("div", {}, el("code", { text: link.dir }), " → ", theirs(kb ? kb.name : link.kb_id)),
    el("div", { class: `link-state ${link.state}`, text: words + when }),
    ...linkNotes(link),
    el("div", { class: "row" }, ...buttons));
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
  section.hidden = !links.length;
  $("link-list").replaceChildren(...links.map(linkItem));
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
