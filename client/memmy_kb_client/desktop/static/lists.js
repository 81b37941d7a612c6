// @ts-check
// The lists: the person's own knowledge bases and those shared with them (directly, or through a team), each
// with its Recall switch and actions (see kb.js for the one open).
import { api, human, seg } from "./api.js";
import { askName, confirmDanger } from "./dialog.js";
import { $, el, notice, theirs } from "./dom.js";
import { formatSize } from "./format.js";
import { t, tn } from "./i18n.js";
import { closeKb, openKb, renderKbHeader } from "./kb.js";
import { reopened, state } from "./state.js";

/** @typedef {import("./state.js").KnowledgeBase} KnowledgeBase */

export async function loadLists() {
  const answer = await api("GET", "/knowledge-bases");
  state.kbs = answer.items || [];
  state.kbsLoaded = true;
  renderLists();
  const open = state.kb;
  if (open && !state.kbs.some((kb) => kb.id === open.id)) closeKb(t("gone"));
  else if (open) {
    state.kb = reopened(state.kbs, open) || null;
    renderKbHeader();
  }
}

/** @param {KnowledgeBase} kb */
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

/**
 * A KB left: closed first when it is the one open.
 * @param {KnowledgeBase} kb
 */
function closeIfOpen(kb) {
  if (state.kb && state.kb.id === kb.id) closeKb();
}

/** @param {KnowledgeBase} kb */
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
          closeIfOpen(kb);
          await loadLists();
        }) }),
    );
  } else if (!(kb.teams || []).length) {
    // Read through a team only: there is no share of one's own to leave (the team is left instead).
    actions.append(el("button", { type: "button", class: "danger", text: t("leave"), onclick: () => confirmDanger(
      t("leave"), t("confirmLeave", { name: kb.name }), t("leave"), async () => {
        await api("DELETE", `/knowledge-bases/${seg(kb.id)}/members/${seg(state.me ? state.me.user_id : "")}`);
        closeIfOpen(kb);
        await loadLists();
      }) }));
  }
  const item = el("li", { "data-kb": kb.id, class: state.kb && state.kb.id === kb.id ? "current" : "" },
    el("button", { type: "button", class: "link", text: kb.name, onclick: () => openKb(kb) }));
  if (!owned) {
    const owner = kb.owner || {};
    const contact = owner.contact ? [" · ", theirs(owner.contact)] : [];
    item.append(el("span", { class: "meta" }, `${t("sharedBy")}: `, theirs(owner.display_name || owner.user_id), ...contact));
    const teams = (kb.teams || []).flatMap((team, index) => [index ? ", " : "", theirs(team.name)]);
    if (teams.length) item.append(el("span", { class: "meta teams-of" }, `${t("throughTeam")}: `, ...teams));
  }
  const files = kb.file_count || 0;
  const stats = tn("kbStats", files, { files, size: formatSize(kb.bytes_used || 0) });
  item.append(el("span", { class: "meta stats", text: stats }), actions);
  return item;
}

export function renderLists() {
  const mine = state.kbs.filter((kb) => kb.role === "owner");
  const shared = state.kbs.filter((kb) => kb.role !== "owner");
  $("mine").replaceChildren(...(mine.length ? mine.map(kbItem) : [el("li", { class: "muted", text: t("noKbs") })]));
  $("shared").replaceChildren(...(shared.length ? shared.map(kbItem) : [el("li", { class: "muted", text: t("noShared") })]));
  // A new user: what a knowledge base is, and the one button that starts one, where the open KB would be.
  // Neither button shows before the lists are known (index.html), so none moves once it can be clicked.
  const none = state.kbs.length === 0;
  // A team open takes the welcome's place; then the lists' own button starts a KB.
  $("welcome").hidden = !none || Boolean(state.kb) || Boolean(state.team);
  $("new-kb").hidden = !$("welcome").hidden;
}
