// @ts-check
// The knowledge-base page's start: its language, its session, the sign-in and sign-out, and each panel's
// controls wired. The page is ES modules with no build step; index.html loads this one, which imports the
// rest: the words (text.js, text-sync.js, i18n.js), the requests (api.js), what the page holds (state.js),
// the lists (lists.js), the open knowledge base (kb.js, uploads.js, share.js, versions.js), the synced
// folders (links.js), the teams (teams.js, team.js, team-rules.js, text-teams.js), the connected apps
// (connections.js, connection-rules.js, text-connections.js) and "Try a question" (ask.js).
import { api, human, newKey, seg } from "./api.js";
import { ask, renderAnswer } from "./ask.js";
import { loadConnections, renderConnections } from "./connections.js";
import { askName, confirmDanger, trapFocus } from "./dialog.js";
import { $, notice } from "./dom.js";
import { listen } from "./events.js";
import { COMMANDS, chooseLanguage, language, setCommands, setLanguage, t } from "./i18n.js";
import { loadListing, openKb, renderEntries, renderKbHeader } from "./kb.js";
import { loadLinks } from "./links.js";
import { loadLists, renderLists } from "./lists.js";
import { shareDialog } from "./share.js";
import { folderId, isOwner, state } from "./state.js";
import { closeTeam, renderTeam, wireTeam } from "./team.js";
import { loadTeams, renderTeams, wireTeams } from "./teams.js";
import { uploadFiles } from "./uploads.js";

/** @typedef {import("./text.js").Lang} Lang */

// The page's language: ?lang=, else the browser's first; the language links change it in place.
setLanguage(chooseLanguage(new URLSearchParams(location.search).get("lang"),
  [(navigator.languages && navigator.languages[0]) || navigator.language || ""]));

/** @param {string} id */
const input = (id) => /** @type {HTMLInputElement} */ ($(id));

function translateStatic() {
  const lang = language();
  document.documentElement.lang = lang === "en" ? "en" : "zh-CN";
  document.title = t("title");
  for (const node of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-t]"))) {
    node.textContent = t(node.dataset.t || "");
  }
  $("question").setAttribute("placeholder", lang === "en" ? "e.g. What changed in the travel policy?" : "例如：差旅报销需要哪些发票？");
  $("langs").setAttribute("aria-label", t("language"));
  for (const link of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("#langs a"))) {
    if (link.dataset.lang === lang) link.setAttribute("aria-current", "true");
    else link.removeAttribute("aria-current");
  }
}

/**
 * The other language, in place: what is open (the KB, its folder, the answer) stays, drawn again in it.
 * @param {Lang} lang
 */
function switchLanguage(lang) {
  if (lang === language()) return;
  setLanguage(lang);
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
  renderTeams();
  renderTeam();
  renderConnections();
  renderAnswer();
  loadLinks().catch(() => {});
}

function openNewKbForm() {
  $("new-kb-form").hidden = false;
  $("new-kb-name").focus();
}

function wireLists() {
  $("new-kb").addEventListener("click", openNewKbForm);
  $("new-kb-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = input("new-kb-name").value.trim();
    if (!name) return;
    try {
      const kb = await api("POST", "/knowledge-bases", { name }, { "Idempotency-Key": newKey() });
      input("new-kb-name").value = "";
      $("new-kb-form").hidden = true;
      await loadLists();
      openKb(state.kbs.find((item) => item.id === kb.id) || kb);
    } catch (error) {
      notice(human(error));
    }
  });
  /** @type {HTMLElement} */ ($("new-kb-form").querySelector("[data-cancel]")).addEventListener("click", () => { $("new-kb-form").hidden = true; });
  $("new-kb-form").addEventListener("keydown", (event) => {
    if (event.key === "Escape") { $("new-kb-form").hidden = true; ($("new-kb").hidden ? $("welcome-new") : $("new-kb")).focus(); }
  });
  $("welcome-new").addEventListener("click", openNewKbForm);
}

function wireKb() {
  $("upload").addEventListener("click", () => $("file-input").click());
  $("file-input").addEventListener("change", () => {
    const chosen = input("file-input");
    const files = Array.from(chosen.files || []);
    chosen.value = "";
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
    uploadFiles(Array.from((event.dataTransfer && event.dataTransfer.files) || []));
  });
  $("new-folder").addEventListener("click", () => askName(t("newFolder"), "", async (name) => {
    await api("POST", `/knowledge-bases/${seg(/** @type {{id: string}} */ (state.kb).id)}/folders`, { name, parent_id: folderId() });
    await loadListing();
  }));
  $("share").addEventListener("click", shareDialog);
  $("kb-heading").setAttribute("tabindex", "-1");
}

function wire() {
  wireLists();
  $("dialog").addEventListener("keydown", trapFocus);
  wireKb();
  wireTeams();
  wireTeam();
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const query = input("question").value.trim();
    if (query) ask(query);
  });
  for (const link of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll("#langs a"))) {
    link.addEventListener("click", (event) => {
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;  // a new tab: as is
      event.preventDefault();
      switchLanguage(link.dataset.lang === "en" ? "en" : "zh");
    });
  }
  // Coming back to the page: what others changed meanwhile (a KB shared, or no longer shared).
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && state.csrf) {
      loadLists().catch(() => {});
      loadTeams();
      loadConnections();
    }
  });
  // What the open KB's panel tells the lists, and the open team the Teams section (events.js). A KB and a
  // team take the same place: opening one closes the other.
  listen("kb-shown", () => {
    if (state.kb && state.team) closeTeam();
    renderLists();
  });
  listen("lists-stale", loadLists);
  listen("teams-stale", loadTeams);
  listen("team-shown", () => {
    renderTeams();
    renderLists();  // the welcome gives way to a team as to a KB
  });
}

// Signing in: the local service starts the provider's login (PKCE, on its own loopback callback) and
// answers its URL; this tab goes there, and the callback brings it back to this page, signed in.
async function signIn() {
  try {
    const started = await api("POST", "/login", { lang: language() });
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

/**
 * The page when it cannot show the lists: without a session (a new link is needed), or signed out.
 * @param {string} view "needSession" or "needLogin"
 * @param {string} [before] a sentence before the notice's
 */
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
    setCommands(session.commands || {});
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
    await loadTeams();  // says its own failure in the Teams section
    await loadConnections();  // and this one in the Connected apps section
    await loadLinks();
  } catch (error) {
    notice(human(error));
  }
}

start();
