// @ts-check
// One team open, where the knowledge base would be: its members with their roles, an invitation sent, a
// member removed or made admin or owner (as far as the person's role allows: team-rules.js), the team
// renamed, left or deleted, and the knowledge bases shared with it, each opened or unshared. The Teams
// section (teams.js) and the lists hear what changed through events.js.
import { ApiError, api, human, seg } from "./api.js";
import { askName, confirmDanger } from "./dialog.js";
import { $, el, notice, theirs } from "./dom.js";
import { announce } from "./events.js";
import { t } from "./i18n.js";
import { closeKb, openKb } from "./kb.js";
import { state } from "./state.js";
import { canUnshare, memberActions, roleWords, sortMembers, teamActions, teamStats } from "./team-rules.js";

/** @typedef {import("./state.js").TeamDetail} TeamDetail */
/** @typedef {import("./state.js").TeamMember} TeamMember */
/** @typedef {import("./state.js").TeamKnowledgeBase} TeamKnowledgeBase */
/** @typedef {import("./team-rules.js").MemberAction} MemberAction */

const me = () => (state.me ? state.me.user_id : "");

/**
 * The panel's own lines: what was done, or (``error``) what went wrong.
 * @param {string} message
 * @param {boolean} [error]
 */
function say(message, error) {
  $("team-status").textContent = error ? "" : message;
  $("team-error").textContent = error ? message : "";
}

/**
 * A team opened in place of the knowledge base (one of them open at a time), its heading focused.
 * @param {string} id
 */
export async function openTeam(id) {
  if (state.kb) closeKb();
  say("");
  if (!(await loadTeam(id))) return;
  $("team").hidden = false;
  $("team-heading").focus();
}

/**
 * The team read again (GET /teams/{id}) and drawn; false when it is gone for the person (closed, said).
 * @param {string} id
 * @returns {Promise<boolean>}
 */
export async function loadTeam(id) {
  /** @type {TeamDetail} */
  let team;
  try {
    team = await api("GET", `/teams/${seg(id)}`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      closeTeam(human(error));
      await announce("teams-stale").catch(() => {});
    } else {
      notice(human(error));
    }
    return false;
  }
  state.team = team;
  renderTeam();
  announce("team-shown");
  return true;
}

/** @param {string} [message] said over the page, e.g. why it closed */
export function closeTeam(message) {
  state.team = null;
  $("team").hidden = true;
  announce("team-shown");
  if (message) notice(message);
}

/**
 * Something done to the team: then the Teams section read again, and with it the team open (teams.js), and
 * (``lists``) the lists, when what the person reads may have changed.
 * @param {() => Promise<unknown>} action
 * @param {boolean} [lists]
 */
async function changed(action, lists) {
  await action();
  await announce("teams-stale");
  if (lists) await announce("lists-stale");
}

/**
 * A member's buttons, each named for its member (screen readers hear whom it acts on).
 * @param {TeamDetail} team
 * @param {TeamMember} member
 */
function memberButtons(team, member) {
  const name = member.display_name || member.user_id;
  const path = `/teams/${seg(team.id)}/members/${seg(member.user_id)}`;
  /** @param {string} role */
  const setRole = (role) => changed(() => api("PATCH", path, { role }));
  /** @type {Record<MemberAction, () => unknown>} */
  const runs = {
    cancel: () => confirmDanger(t("cancelInvite"), t("confirmCancelInvite", { name }), t("cancelInvite"), () => changed(() => api("DELETE", path))),
    remove: () => confirmDanger(t("remove"), t("confirmRemoveMember", { name, team: team.name }), t("remove"), () => changed(() => api("DELETE", path))),
    makeAdmin: () => setRole("admin").catch((error) => say(human(error), true)),
    makeMember: () => setRole("member").catch((error) => say(human(error), true)),
    makeOwner: () => confirmDanger(t("makeOwner"), t("confirmMakeOwner", { name, team: team.name }), t("makeOwner"), () => setRole("owner")),
  };
  /** @type {Record<MemberAction, string>} */
  const words = { cancel: "cancelInvite", remove: "remove", makeAdmin: "makeAdmin", makeMember: "makeMember", makeOwner: "makeOwner" };
  // Named for a screen reader by its words and then whom it acts on (its words first, for voice control).
  return memberActions({ role: team.role, user_id: me() }, member).map((action) => el("button", {
    type: "button", class: action === "remove" || action === "cancel" ? "danger" : null, "data-action": action,
    text: t(words[action]), "aria-label": `${t(words[action])} ${name}`, onclick: runs[action],
  }));
}

/**
 * @param {TeamDetail} team
 * @param {TeamMember} member
 */
function memberItem(team, member) {
  const self = member.user_id === me();
  return el("li", { "data-member": member.user_id, "data-state": member.state },
    el("span", { class: "who-line" }, theirs(member.display_name || member.user_id),
      member.display_name && member.display_name !== member.user_id ? el("span", { class: "muted" }, " (", theirs(member.user_id), ")") : null,
      self ? t("you") : "",
      el("span", { class: `role ${member.state === "invited" ? "invited" : member.role}`, text: roleWords(member) })),
    el("span", { class: "actions" }, ...memberButtons(team, member)));
}

/**
 * A knowledge base shared with the team: its name opens it; unshared by its owner, or the team's owner or
 * admins.
 * @param {TeamDetail} team
 * @param {TeamKnowledgeBase} kb
 */
function kbItem(team, kb) {
  const owner = kb.owner || { user_id: "", display_name: "" };
  const open = async () => {
    let known = state.kbs.find((item) => item.id === kb.id);
    if (!known) { await announce("lists-stale").catch(() => {}); known = state.kbs.find((item) => item.id === kb.id); }
    if (known) openKb(known);
    else notice(t("gone"));
  };
  const unshare = () => confirmDanger(t("unshare"), t("confirmUnshareTeam", { kb: kb.name, team: team.name }), t("unshare"),
    () => changed(() => api("DELETE", `/knowledge-bases/${seg(kb.id)}/teams/${seg(team.id)}`), true));
  return el("li", { "data-kb": kb.id },
    el("span", {}, el("button", { type: "button", class: "link", text: kb.name, onclick: open }),
      el("span", { class: "muted" }, ` · ${t("sharedBy")}: `, theirs(owner.display_name || owner.user_id))),
    canUnshare(team.role, kb, me())
      ? el("button", { type: "button", class: "danger", text: t("unshare"), "aria-label": `${t("unshare")} ${kb.name}`, onclick: unshare })
      : null);
}

/** The team's own buttons: rename, leave, delete (by role), and close. */
function teamButtons() {
  const team = /** @type {TeamDetail} */ (state.team);
  const path = `/teams/${seg(team.id)}`;
  const gone = async () => {
    closeTeam();
    await announce("teams-stale");
    await announce("lists-stale");
    $("teams-heading").focus();
  };
  /** @type {HTMLElement[]} */
  const buttons = [];
  for (const action of teamActions(team.role)) {
    if (action === "rename") {
      buttons.push(el("button", { type: "button", "data-action": action, text: t("rename"), onclick: () => askName(t("renameTeam"), team.name,
        (name) => changed(() => api("PATCH", path, { name }))) }));
    } else if (action === "leave") {
      buttons.push(el("button", { type: "button", class: "danger", "data-action": action, text: t("leaveTeam"), onclick: () => confirmDanger(
        t("leaveTeam"), t("confirmLeaveTeam", { name: team.name }), t("leaveTeam"), async () => {
          await api("DELETE", `${path}/members/${seg(me())}`);
          await gone();
        }) }));
    } else if (action === "delete") {
      buttons.push(el("button", { type: "button", class: "danger", "data-action": action, text: t("deleteTeam"), onclick: () => confirmDanger(
        t("deleteTeam"), t("confirmDeleteTeam", { name: team.name }), t("deleteTeam"), async () => {
          await api("DELETE", path);
          await gone();
        }) }));
    }
  }
  buttons.push(el("button", { type: "button", class: "quiet", text: t("close"), "aria-label": t("closeTeam"), onclick: () => {
    closeTeam();
    $("teams-heading").focus();
  } }));
  return buttons;
}

/** The team open, drawn (again, in the page's language). */
export function renderTeam() {
  const team = state.team;
  if (!team) return;
  $("team-heading").textContent = team.name;
  $("team-tools").replaceChildren(...teamButtons());
  $("team-meta").textContent = `${t("yourRole", { role: roleWords(team) })} · ${teamStats(team)}`;
  $("invite-form").hidden = !teamActions(team.role).includes("invite");
  const members = sortMembers(team.members || []);
  $("team-members").replaceChildren(...members.map((member) => memberItem(team, member)));
  const kbs = team.knowledge_bases || [];
  $("team-kbs").replaceChildren(...(kbs.length ? kbs.map((kb) => kbItem(team, kb)) : [el("li", { class: "muted", text: t("noTeamKbs") })]));
}

/** The panel's controls: the invitation's form. */
export function wireTeam() {
  const input = /** @type {HTMLInputElement} */ ($("invite-identifier"));
  $("invite-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const team = state.team;
    const identifier = input.value.trim();
    if (!team || !identifier) return;
    say("");
    try {
      /** @type {TeamMember} */
      const invited = await api("POST", `/teams/${seg(team.id)}/members`, { identifier });
      input.value = "";
      await announce("teams-stale");
      say(t("invitedOne", { name: invited.display_name || invited.user_id || identifier }));
    } catch (error) {
      say(human(error), true);
    }
  });
  $("team-heading").setAttribute("tabindex", "-1");
}
