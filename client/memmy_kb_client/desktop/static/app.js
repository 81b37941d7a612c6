// The knowledge-base page. Plain JavaScript, no build step: every request goes to the local service
// (/api/...), which adds the cloud login; state-changing ones carry the session's CSRF token. Upload bytes
// go from the browser straight to storage by the presigned POST the cloud hands out.
"use strict";
// The page's words are in text.js, the knowledge bases and a KB's files in kb.js, "Try a question" in
// ask.js, the synced folders in sync.js; this file holds the helpers they share and the start.

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
// in when it cannot show the lists ("needSession", "needLogin"); found: the file an excerpt opened (kb.js).
const state = {
  csrf: "", me: null, kbs: [], kb: null, trail: [], timer: null, busy: false, listing: null, answer: null, view: "",
  found: null,
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
  // A refusal that asks to wait (429) says how long: {seconds} in its sentence.
  const wait = error.details && Number.isInteger(error.details.retry_after_seconds) ? error.details.retry_after_seconds : 1;
  if (TEXT.en[`err_${code}`]) return t(`err_${code}`, { seconds: wait });
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
