// The knowledge-base page. Plain JavaScript, no build step: every request goes to the local service
// (/api/...), which adds the cloud login; state-changing ones carry the session's CSRF token. Upload bytes
// go from the browser straight to storage by the presigned POST the cloud hands out.
"use strict";

const TEXT = {
  zh: {
    title: "Memmy", mine: "我的知识库", shared: "共享给我的", newKb: "新建知识库", name: "名称",
    create: "创建", cancel: "取消", save: "保存", recall: "参与召回", rename: "重命名", del: "删除",
    leave: "退出共享", share: "共享管理", upload: "上传", newFolder: "新建文件夹", move: "移动",
    open: "打开", add: "添加", remove: "移除", ask: "提问", tryHeading: "试一试提问", tryLabel: "试一个问题",
    readOnly: "只读：这是别人共享给你的知识库。", readOnlyBy: "只读：{name} 共享给你的知识库。", dropHint: "把文件拖到这里上传，可一次多个",
    colName: "名称", colStatus: "状态", colSize: "大小", colActions: "操作", emptyFolder: "这里还没有文件。",
    folder: "文件夹", root: "全部文件", uploading: "上传中", processing: "处理中", available: "可用",
    failed: "失败", sharedBy: "共享者", noKbs: "还没有知识库。", noShared: "还没有人共享知识库给你。",
    memberLabel: "用户 ID、手机号或邮箱", members: "成员", noMembers: "还没有共享给任何人。",
    owner: "所有者", reader: "只读成员", moveTo: "移动到", rootFolder: "根目录", parentFolder: "上一级",
    confirmDeleteKb: "删除「{name}」？它的所有文件会对所有成员消失，无法恢复。",
    confirmDeleteFile: "删除「{name}」？", confirmDeleteFolder: "删除文件夹「{name}」和其中的所有内容？",
    confirmLeave: "退出「{name}」？除非所有者再次共享，你将看不到它。",
    added: "已添加 {name}。", excerpts: "摘录", block: "智能体收到的内容", nothing: "在参与召回的知识库中没有找到相关内容。",
    scope: "检索了 {n} 个知识库", loggedIn: "已登录：{name}",
    noKbsToAsk: "你还没有参与召回的知识库：新建一个知识库并上传文件，或请同事把他们的知识库共享给你。",
    noneInRecall: "你的知识库都没有打开“参与召回”：在左侧列表里为要检索的知识库打开它。",
    needSession: "请用 {open} 打开此页面（每个链接只能用一次）。",
    needSessionStack: "请用新链接打开此页面：在运行 {stack} 的终端里按回车键，或运行 {open}（每个链接只能用一次）。",
    needLogin: "尚未登录：点击“登录”，或运行 {login}。",
    confirmSignOut: "要在这台电脑上退出 Memmy 吗？本机服务会忘记你的登录：在你重新登录之前，AI 助手的钩子和搜索都不会再附上知识库的摘录。",
    language: "语言",
    signIn: "登录", fromKb: "来自知识库", fromOneOf: "来自以下知识库之一", signOut: "退出登录", signedOut: "已退出登录。",
    uploadDone: "已上传", uploadFailed: "上传失败：{reason}", gone: "这个知识库已不存在，或已不再共享给你。",
    err_account_not_found: "没有找到这个用户 ID、手机号或邮箱对应的账号（对方需要先登录一次 Memmy）。",
    err_cannot_share_with_self: "这是你自己，不需要共享给自己。",
    err_already_member: "对方已经是成员了。", err_member_limit_reached: "成员数量已达上限。",
    err_identifier_ambiguous: "这个手机号或邮箱被不止一个账号验证过，请改用对方的用户 ID 分享。",
    err_kb_limit_reached: "你拥有的知识库数量已达上限：请先删除不再使用的知识库。",
    err_kb_file_limit_reached: "这个知识库的文件数量已达上限：请先删除一些文件。",
    err_kb_storage_limit_reached: "这个知识库的存储空间已满：请先删除一些文件。",
    err_memos_quota_exhausted: "服务的知识库容量已满，暂时无法新建：请稍后再试，或联系管理员。",
    err_rate_limited: "操作太频繁，请稍后再试。", err_not_found: "找不到了：可能已被删除或不再共享给你。",
    err_forbidden: "只有所有者可以这样做。", err_validation_error: "请检查输入的内容。",
    err_session_required: "会话已结束：请运行 {open}。",
    err_desktop_logged_out: "本机服务未登录：请运行 {login}。",
    err_cloud_login_rejected: "云端拒绝了登录：请重新运行 {login}。",
    err_login_refresh_unreachable: "登录已过期，且暂时无法连接登录服务续期：请稍后再试。",
    err_cloud_unreachable: "连不上云端，请检查网络后重试。", err_conflict: "与现有内容冲突（可能重名）。",
    err_too_large: "文件太大。", err_unsupported: "不支持这种文件类型。", err_generic: "出错了：{message}",
    err_upload_not_failed: "这个上传没有失败：它仍在处理中，或已经成为文件。",
    close: "关闭", dismiss: "清除", dismissOne: "清除 {name}", kbStats: "{files} 个文件 · {size}",
    uploadProgress: "{percent}%（共 {size}）",
    welcomeHeading: "知识库是什么？",
    welcomeWhat: "知识库是你的一组文档（PDF、Word、Markdown、文本、JSON、XML）。打开“参与召回”后，你的 AI 助手回答问题时会在其中找出相关段落，并注明出自哪份文档；你也可以把知识库共享给同事。",
    welcomeHow: "新建一个知识库，再把文件上传进去，就可以开始了。",
  },
  en: {
    title: "Memmy", mine: "My knowledge bases", shared: "Shared with me",
    newKb: "New knowledge base", name: "Name", create: "Create", cancel: "Cancel", save: "Save",
    recall: "Recall", rename: "Rename", del: "Delete", leave: "Leave", share: "Share", upload: "Upload",
    newFolder: "New folder", move: "Move", open: "Open", add: "Add", remove: "Remove", ask: "Ask",
    tryHeading: "Try a question", tryLabel: "Try a question",
    readOnly: "Read only: someone shared this knowledge base with you.",
    readOnlyBy: "Read only: {name} shared this knowledge base with you.",
    dropHint: "Drop files here to upload (several at once)", colName: "Name", colStatus: "Status",
    colSize: "Size", colActions: "Actions", emptyFolder: "Nothing here yet.", folder: "Folder",
    root: "All files", uploading: "Uploading", processing: "Processing", available: "Available",
    failed: "Failed", sharedBy: "Shared by", noKbs: "No knowledge bases yet.",
    noShared: "Nobody has shared a knowledge base with you yet.", memberLabel: "User ID, phone or email",
    members: "Members", noMembers: "Not shared with anyone yet.", owner: "Owner", reader: "Reader",
    moveTo: "Move to", rootFolder: "Top level", parentFolder: "Up one level",
    confirmDeleteKb: "Delete “{name}”? Its files go for every member, and cannot be brought back.",
    confirmDeleteFile: "Delete “{name}”?", confirmDeleteFolder: "Delete the folder “{name}” and everything in it?",
    confirmLeave: "Leave “{name}”? You will not see it again unless its owner shares it again.",
    added: "Added {name}.", excerpts: "Excerpts", block: "The block the agent receives",
    nothing: "Nothing found in the knowledge bases you recall from.", scope: "Searched {n} knowledge bases",
    scopeOne: "Searched 1 knowledge base",
    noKbsToAsk: "You have no knowledge bases in recall yet: create one and upload files into it, or ask a colleague to share theirs with you.",
    noneInRecall: "None of your knowledge bases takes part in recall: turn Recall on for those to search, in the list.",
    loggedIn: "Signed in as {name}", needSession: "Open this page with {open} (each link works once).",
    needSessionStack: "Open this page with a new link: press Enter in the terminal where {stack} runs, or run {open} (each link works once).",
    needLogin: "Not signed in: choose Sign in, or run {login}.",
    confirmSignOut: "Sign out of Memmy on this computer? The desktop service forgets your login: until you sign in again, your agents' hooks and searches add no excerpts from your knowledge bases.",
    language: "Language",
    signIn: "Sign in", fromKb: "From", fromOneOf: "From one of", signOut: "Sign out", signedOut: "Signed out.", uploadDone: "Uploaded",
    uploadFailed: "Upload failed: {reason}", gone: "This knowledge base is gone, or no longer shared with you.",
    err_account_not_found: "No account has this user ID, phone or email (they need to sign in to Memmy once first).",
    err_cannot_share_with_self: "That is you: you already own this knowledge base.",
    err_already_member: "They already have access.", err_member_limit_reached: "This knowledge base has as many members as it can have.",
    err_identifier_ambiguous: "More than one account has verified this phone or email; share by their user ID instead.",
    err_kb_limit_reached: "You own as many knowledge bases as you can: delete one you no longer use first.",
    err_kb_file_limit_reached: "This knowledge base holds as many files as it can: delete some files first.",
    err_kb_storage_limit_reached: "This knowledge base is full: delete some files first.",
    err_memos_quota_exhausted: "The service cannot hold more knowledge bases right now: try again later, or tell the administrator.",
    err_rate_limited: "Too many attempts: wait a little and try again.",
    err_not_found: "Not found: it may have been deleted, or is no longer shared with you.",
    err_forbidden: "Only the owner can do that.", err_validation_error: "Please check what you typed.",
    err_session_required: "This session has ended: run {open}.",
    err_desktop_logged_out: "The desktop service is not logged in: run {login}.",
    err_cloud_login_rejected: "The cloud refused the login: run {login} again.",
    err_login_refresh_unreachable: "The sign-in has expired and the sign-in service cannot be reached to renew it: try again shortly.",
    err_cloud_unreachable: "The cloud cannot be reached: check the connection and try again.",
    err_conflict: "That conflicts with something already there (the same name?).",
    err_too_large: "The file is too large.", err_unsupported: "This kind of file is not supported.",
    err_generic: "Something went wrong: {message}",
    err_upload_not_failed: "This upload has not failed: it is still in progress, or became a file.",
    close: "Close", dismiss: "Dismiss", dismissOne: "Dismiss {name}", kbStats: "{files} files · {size}",
    kbStatsOne: "1 file · {size}", uploadProgress: "{percent}% of {size}",
    welcomeHeading: "What is a knowledge base?",
    welcomeWhat: "A knowledge base is a set of your documents (PDF, Word, Markdown, text, JSON, XML). With Recall on, your AI assistant finds the passages that answer a question in it, and says which document each came from; you can share a knowledge base with colleagues too.",
    welcomeHow: "Create one, then upload files into it to begin.",
  },
};

// Why an upload or file failed, by the code the cloud sends beside its English sentence (reason_code).
const REASONS = {
  zh: {
    invalid_pdf: "文件不是有效的 PDF。", invalid_doc: "文件不是有效的 Word 97-2003 文档（.doc）。",
    invalid_docx: "文件不是有效的 Word 文档（.docx）。", invalid_json: "文件不是有效的 JSON。",
    invalid_xml: "文件不是格式正确的 XML。", not_utf8: "文件不是有效的 UTF-8 文本。",
    xml_doctype: "不接受带 DOCTYPE 或实体声明的 XML 文件。", xml_too_large_part: "XML 文件中有过大的标签或注释，无法处理。",
    xml_too_deep: "XML 文件的元素嵌套太深。", xml_too_many_names: "XML 文件使用的属性名太多。",
    xml_encoding: "XML 文件必须使用 UTF-8 编码。", xml_external: "不接受引用其他文件或样式表的 XML 文件。",
    unsupported_file_type: "不支持这种文件类型。", pdf_truncated: "PDF 缺少文件结尾，可能不完整。",
    doc_bad_header: ".doc 文件的文件头无效。", docx_bomb: "Word 文档解压后远大于文件本身（疑似压缩炸弹）。",
    docx_bad_xml: "Word 文档的正文（word/document.xml）不是格式正确的 XML。", kb_gone: "知识库已被删除。",
    folder_gone: "文件夹已被删除。", larger_than_declared: "文件比声明的大小更大。", smaller_than_declared: "文件比声明的大小更小。",
    engine_refused: "知识引擎无法接收这个文件。", engine_unavailable: "知识引擎长时间不可用：请重新上传这个文件。",
    engine_unsupported: "知识引擎不接受这种类型的文件。", engine_too_large: "文件太大，知识引擎无法处理。",
    engine_lost_file: "知识引擎中已经没有这个文件了。", engine_failed: "知识引擎无法处理这个文件。",
    unconfirmed: "无法确认这次上传：请重新上传这个文件。",
    kb_file_limit_reached: "这个知识库的文件数量已达上限：请先删除一些文件。",
    kb_storage_limit_reached: "这个知识库的存储空间已满：请先删除一些文件。",
    sha256_mismatch: "文件内容与声明的 SHA-256 不符。", file_gone: "文件已被删除。",
    replace_superseded: "已经开始了这个文件的另一次替换。",
    engine_failed_version: "知识引擎无法处理这个版本：仍由上一个版本回答。",
    name_taken: "这个文件夹里已经有同名文件：请改为替换它。", name_raced: "同一时间有另一个同名文件上传到这个文件夹：请重新上传。",
  },
  en: {
    invalid_pdf: "The file is not a valid PDF.", invalid_doc: "The file is not a valid Word 97-2003 document (.doc).",
    invalid_docx: "The file is not a valid Word document (.docx).", invalid_json: "The file is not valid JSON.",
    invalid_xml: "The file is not well-formed XML.", not_utf8: "The file is not valid UTF-8 text.",
    xml_doctype: "XML files with a DOCTYPE or entity declarations are not accepted.",
    xml_too_large_part: "The XML file has a tag or comment too large to process.",
    xml_too_deep: "The XML file nests elements too deeply.", xml_too_many_names: "The XML file uses too many different attribute names.",
    xml_encoding: "XML files must be encoded as UTF-8.", xml_external: "XML files that include other files or stylesheets are not accepted.",
    unsupported_file_type: "This file type is not supported.", pdf_truncated: "The PDF has no end-of-file trailer; it may be cut short.",
    doc_bad_header: "The .doc file's header is not valid.", docx_bomb: "The Word document unpacks to far more than its size (a zip bomb?).",
    docx_bad_xml: "The Word document's text (word/document.xml) is not well-formed XML.", kb_gone: "The knowledge base was deleted.",
    folder_gone: "The folder was deleted.", larger_than_declared: "The file is larger than declared.",
    smaller_than_declared: "The file is smaller than declared.", engine_refused: "The knowledge engine could not accept this file.",
    engine_unavailable: "The knowledge engine was unavailable for too long; please upload the file again.",
    engine_unsupported: "The knowledge engine does not accept this type of file.", engine_too_large: "The file is too large for the knowledge engine.",
    engine_lost_file: "The file is no longer held by the knowledge engine.", engine_failed: "The knowledge engine could not process this file.",
    unconfirmed: "The upload could not be confirmed; please upload the file again.",
    kb_file_limit_reached: "This knowledge base holds as many files as it can: delete some files first.",
    kb_storage_limit_reached: "This knowledge base is full: delete some files first.",
    sha256_mismatch: "The file's content does not match the SHA-256 declared for it.", file_gone: "The file was deleted.",
    replace_superseded: "Another replacement of this file was started.",
    engine_failed_version: "The knowledge engine could not process this version; the previous version still answers.",
    name_taken: "A file of this name is already in this folder; replace it instead.",
    name_raced: "Another upload of this name into this folder was being checked at the same time; upload it again.",
  },
};

// A failure's reason in the page's language; the cloud's own sentence only for a code the page lacks.
function reasonText(entry) {
  return (entry.reason_code && REASONS[LANG][entry.reason_code]) || entry.reason || "";
}

const params = new URLSearchParams(location.search);
// The page's language: ?lang=, else the browser's first; the language links change it in place.
let LANG = (() => {
  const asked = params.get("lang");
  if (asked === "en" || asked === "zh") return asked;
  const first = ((navigator.languages && navigator.languages[0]) || navigator.language || "").toLowerCase();
  return first.startsWith("en") ? "en" : "zh";
})();

// The commands the page tells the person to run, as they can run them (the service says which: its own
// path to memmy-kb, and the local stack's command when the stack runs it).
const COMMANDS = { open: "memmy-kb desktop open", login: "memmy-kb desktop login", stack: "" };

function t(key, vars) {
  let text = TEXT[LANG][key] ?? TEXT.en[key] ?? key;
  // A function, not a string, as the replacement: "$&" or "$'" in a name are text, not patterns.
  for (const [name, value] of Object.entries({ ...COMMANDS, ...(vars || {}) })) {
    text = text.replaceAll(`{${name}}`, () => String(value));
  }
  return text;
}

// A count in words: the key's "One" form for one where the language has it ("1 file"; Chinese has none).
function tn(key, n, vars) {
  return t(n === 1 && TEXT[LANG][`${key}One`] ? `${key}One` : key, { n, ...(vars || {}) });
}

const $ = (id) => document.getElementById(id);

// Another person's text (a KB, sharer or document name) set apart in a <bdi>: a bidi override or
// right-to-left letters in it cannot reorder the page's words around it ("Shared by ...").
const theirs = (text) => el("bdi", { text: String(text ?? "") });

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

// ------------------------------------------------------------------------------------------ the API

// listing and answer: the last shown, drawn again in the other language; view: the notice the page is
// in when it cannot show the lists ("needSession", "needLogin").
const state = {
  csrf: "", me: null, kbs: [], kb: null, trail: [], timer: null, busy: false, listing: null, answer: null, view: "",
};

class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message || code);
    this.status = status;
    this.code = code;
    this.details = details || null;  // e.g. version_conflict's current version
  }
}

async function api(method, path, body, headers) {
  const sent = { Accept: "application/json", ...(headers || {}) };
  if (method !== "GET") sent["X-CSRF-Token"] = state.csrf;
  if (body !== undefined) sent["Content-Type"] = "application/json";
  const response = await fetch(`/api${path}`, {
    method, headers: sent, credentials: "same-origin", cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = {};
  if (response.status !== 204) {
    try { data = await response.json(); } catch (_) { data = {}; }
  }
  if (!response.ok) {
    const error = data.error || {};
    throw new ApiError(response.status, error.code || "", error.message || data.message || response.statusText, error.details);
  }
  return data;
}

function human(error) {
  if (!(error instanceof ApiError)) return t("err_generic", { message: error.message || String(error) });
  const code = error.code || "";
  if (TEXT.en[`err_${code}`]) return t(`err_${code}`);
  if (code.endsWith("not_found") || error.status === 404) return t("err_not_found");
  if (error.status === 429 || code.includes("rate")) return t("err_rate_limited");
  if (error.status === 413 || code.includes("too_large")) return t("err_too_large");
  if (code.includes("unsupported") || error.status === 415) return t("err_unsupported");
  if (error.status === 403) return t("err_forbidden");
  if (error.status === 409) return t("err_conflict");
  if (error.status === 422) return `${t("err_validation_error")} (${error.message})`;
  return t("err_generic", { message: error.message });
}

// Every character but A-Z a-z 0-9 - _ ~ as %XX of its UTF-8 bytes: "." and "!'()*" too.
const escapeAll = (text) =>
  encodeURIComponent(text).replace(/[.!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
// An id as a path segment, escaped twice: browsers read "%2E" as "." and drop dot segments, so a user id
// "." or ".." escaped once would never arrive. The desktop service takes both layers off and sends the
// cloud the id escaped once (desktop/page.py cloud_segment).
const seg = (id) => escapeAll(escapeAll(id));
const newKey = () => (crypto.randomUUID ? crypto.randomUUID() : Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join(""));

// A message above the page; the commands it names (COMMANDS) set as code.
function notice(message) {
  const box = $("notice");
  box.replaceChildren();
  if (!message) { box.hidden = true; return; }
  const commands = Object.values(COMMANDS).filter(Boolean).sort((a, b) => b.length - a.length);
  let rest = message;
  while (rest) {
    const found = commands.map((c) => [rest.indexOf(c), c]).filter(([at]) => at >= 0).sort((a, b) => a[0] - b[0])[0];
    if (!found) { box.append(rest); break; }
    const [at, command] = found;
    box.append(rest.slice(0, at), el("code", { text: command }));
    rest = rest.slice(at + command.length);
  }
  box.hidden = false;
}

// ------------------------------------------------------------------------------------------ dialogs

function showDialog(title, body, buttons, closeLabel) {
  // buttons: [{label, cls, run, node}] - the first is the default (Enter); run() returning false keeps it
  // open; one with a ``node`` (a button already placed in ``body``) is wired there instead of the row.
  const dialog = $("dialog");
  $("dialog-title").textContent = title;
  $("dialog-body").replaceChildren(...body);
  $("dialog-error").textContent = "";
  const row = $("dialog-buttons");
  row.replaceChildren();
  const run = async (button) => {
    $("dialog-error").textContent = "";
    try {
      if ((await button.run()) !== false) dialog.close();
    } catch (error) {
      $("dialog-error").textContent = human(error);
    }
  };
  buttons.forEach((button, index) => {
    const onclick = (event) => { event.preventDefault(); run(button); };
    if (button.node) { button.node.onclick = onclick; return; }
    row.append(el("button", {
      type: index === 0 ? "submit" : "button", class: button.cls, text: button.label, onclick,
    }));
  });
  row.append(el("button", { type: "button", class: "quiet", text: closeLabel || t("cancel"), onclick: () => dialog.close() }));
  $("dialog-form").onsubmit = (event) => { event.preventDefault(); if (buttons.length) run(buttons[0]); };
  dialog.showModal();
  const first = dialog.querySelector("#dialog-body input, #dialog-body select");
  if (first) first.focus();
}

// Tab and Shift+Tab go round the open dialog's controls and never leave it; Escape closes it (the
// browser's own "cancel" of a modal <dialog>).
function trapFocus(event) {
  if (event.key !== "Tab") return;
  const dialog = $("dialog");
  const stops = Array.from(dialog.querySelectorAll("button, input, select, textarea, a[href], [tabindex]:not([tabindex='-1'])"))
    .filter((node) => !node.disabled && node.offsetParent !== null);
  if (!stops.length) return;
  const first = stops[0];
  const last = stops[stops.length - 1];
  const inside = dialog.contains(document.activeElement);
  if (event.shiftKey && (document.activeElement === first || !inside)) { event.preventDefault(); last.focus(); }
  else if (!event.shiftKey && (document.activeElement === last || !inside)) { event.preventDefault(); first.focus(); }
}

function askName(title, value, save) {
  const input = el("input", { name: "name", maxlength: 200, required: true });
  input.value = value || "";
  showDialog(title, [el("label", {}, el("span", { text: t("name") }), input)], [
    { label: t("save"), cls: "primary", run: () => (input.value.trim() ? save(input.value.trim()) : false) },
  ]);
}

function confirmDanger(title, message, label, action, warning) {
  const body = [el("p", { text: message })];
  if (warning) body.push(el("p", { class: "warn", text: warning }));
  showDialog(title, body, [{ label, cls: "danger", run: action }]);
}

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

function openKb(kb) {
  state.kb = kb;
  state.trail = [];
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
    rows.push(el("tr", { "data-file": file.id },
      el("td", { text: file.name }), cell, el("td", { class: "size", text: formatSize(file.size_bytes) }),
      el("td", { class: "acts" }, ...rowActions("file", file, listing))));
  }
  $("entries").replaceChildren(...rows);
  $("empty").hidden = rows.length > 0;
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

// ---------------------------------------------------------------------------------- try a question

// Where an excerpt came from: its knowledge base (and whose share), or the group of KBs searched together
// (each with whose share it is, for one shared with you); the nodes of one line, others' text in <bdi>.
function sourceOf(item) {
  const owner = (o) => (o ? [` · ${t("sharedBy")} `, theirs(o.name || ""), ...(o.contact ? [" (", theirs(o.contact), ")"] : [])] : []);
  if (item.knowledge_base) return [`${t("fromKb")} `, theirs(item.knowledge_base.name), ...owner(item.owner)];
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
      parts.push(el("article", { class: "excerpt" }, el("h3", {}, "《", theirs(item.title), "》"),
        el("p", { class: "source muted" }, ...sourceOf(item)), el("p", { class: "text", text: item.content })));
    }
  }
  if (result.context) {
    parts.push(el("details", {}, el("summary", { text: t("block") }), el("pre", { text: result.context })));
  }
  $("answer").replaceChildren(...parts);
}

// ------------------------------------------------------------------------------------------- start

function translateStatic() {
  document.documentElement.lang = LANG === "en" ? "en" : "zh-CN";
  document.title = t("title");
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
  $("question").setAttribute("placeholder", LANG === "en" ? "e.g. What changed in the travel policy?" : "例如：差旅报销需要哪些发票？");
  $("langs").setAttribute("aria-label", t("language"));
  for (const link of document.querySelectorAll("#langs a")) {
    if (link.dataset.lang === LANG) link.setAttribute("aria-current", "true");
    else link.removeAttribute("aria-current");
  }
}

// The other language, in place: what is open (the KB, its folder, the answer) stays, drawn again in it.
function switchLanguage(lang) {
  if (lang === LANG) return;
  LANG = lang;
  const url = new URL(location.href);
  url.searchParams.set("lang", lang);
  history.replaceState(history.state, "", url);
  translateStatic();
  if (state.view) { showView(state.view); return; }
  notice("");
  if (!state.me) return;
  renderWho();
  renderLists();
  if (state.kb) {
    renderKbHeader();
    if (state.listing) renderEntries(state.listing);
  }
  renderAnswer();
  if (typeof loadLinks === "function") loadLinks().catch(() => {});  // sync.js
}

function wire() {
  $("new-kb").addEventListener("click", () => {
    $("new-kb-form").hidden = false;
    $("new-kb-name").focus();
  });
  $("new-kb-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("new-kb-name").value.trim();
    if (!name) return;
    try {
      const kb = await api("POST", "/knowledge-bases", { name }, { "Idempotency-Key": newKey() });
      $("new-kb-name").value = "";
      $("new-kb-form").hidden = true;
      await loadLists();
      openKb(state.kbs.find((item) => item.id === kb.id) || kb);
    } catch (error) {
      notice(human(error));
    }
  });
  $("new-kb-form").querySelector("[data-cancel]").addEventListener("click", () => { $("new-kb-form").hidden = true; });
  $("new-kb-form").addEventListener("keydown", (event) => {
    if (event.key === "Escape") { $("new-kb-form").hidden = true; ($("new-kb").hidden ? $("welcome-new") : $("new-kb")).focus(); }
  });
  $("welcome-new").addEventListener("click", () => {
    $("new-kb-form").hidden = false;
    $("new-kb-name").focus();
  });
  $("dialog").addEventListener("keydown", trapFocus);
  $("upload").addEventListener("click", () => $("file-input").click());
  $("file-input").addEventListener("change", (event) => {
    const files = Array.from(event.target.files || []);
    event.target.value = "";
    uploadFiles(files);
  });
  const drop = $("kb");
  drop.addEventListener("dragover", (event) => {
    if (!isOwner()) return;
    event.preventDefault();
    $("drop").classList.add("over");
  });
  drop.addEventListener("dragleave", () => $("drop").classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    if (!isOwner()) return;
    event.preventDefault();
    $("drop").classList.remove("over");
    uploadFiles(Array.from(event.dataTransfer.files || []));
  });
  $("new-folder").addEventListener("click", () => askName(t("newFolder"), "", async (name) => {
    await api("POST", `/knowledge-bases/${seg(state.kb.id)}/folders`, { name, parent_id: folderId() });
    await loadListing();
  }));
  $("share").addEventListener("click", shareDialog);
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const query = $("question").value.trim();
    if (query) ask(query);
  });
  $("kb-heading").setAttribute("tabindex", "-1");
  for (const link of document.querySelectorAll("#langs a")) {
    link.addEventListener("click", (event) => {
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;  // a new tab: as is
      event.preventDefault();
      switchLanguage(link.dataset.lang);
    });
  }
  // Coming back to the page: what others changed meanwhile (a KB shared, or no longer shared).
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && state.csrf) loadLists().catch(() => {});
  });
}

// Signing in: the local service starts the provider's login (PKCE, on its own loopback callback) and
// answers its URL; this tab goes there, and the callback brings it back to this page, signed in.
async function signIn() {
  try {
    const started = await api("POST", "/login", { lang: LANG });
    window.location.assign(started.url);
  } catch (error) {
    notice(human(error));
  }
}

// Signing out signs the whole desktop out, the agents' hooks and searches with it: asked first.
function signOut() {
  confirmDanger(t("signOut"), t("confirmSignOut"), t("signOut"), async () => {
    await api("POST", "/logout");
    state.me = null;
    showView("needLogin", t("signedOut") + " ");
  });
}

function renderWho() {
  $("who").textContent = state.me ? t("loggedIn", { name: state.me.name || state.me.user_id }) : "";
}

// The page when it cannot show the lists: without a session (a new link is needed), or signed out.
function showView(view, before) {
  state.view = view;
  $("app").hidden = true;
  renderWho();
  $("sign-out").hidden = true;
  $("sign-in").hidden = view !== "needLogin";
  const key = view === "needSession" && COMMANDS.stack ? "needSessionStack" : view;
  notice((before || "") + t(key));
}

async function start() {
  translateStatic();
  wire();
  $("sign-in").addEventListener("click", signIn);
  $("sign-out").addEventListener("click", signOut);
  let session;
  try {
    const response = await fetch("/api/session", { credentials: "same-origin", cache: "no-store" });
    session = await response.json().catch(() => ({}));
    Object.assign(COMMANDS, session.commands || {});
    if (response.status === 401) { showView("needSession"); return; }
  } catch (error) {
    notice(t("err_generic", { message: String(error) }));
    return;
  }
  state.csrf = session.csrf;
  state.me = session.user || null;
  if (session.login !== "logged_in" || !state.me) {
    state.me = null;
    showView("needLogin");
    return;
  }
  state.view = "";
  renderWho();
  $("sign-in").hidden = true;
  $("sign-out").hidden = false;
  $("app").hidden = false;
  try {
    await api("PUT", "/me");  // registers the profile, so others can share with this account
    await loadLists();
    await loadLinks();  // sync.js
  } catch (error) {
    notice(human(error));
  }
}

start();
