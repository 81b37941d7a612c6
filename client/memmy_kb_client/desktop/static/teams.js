// @ts-check
// The Teams section beside the lists: the person's teams and the invitations they have, a new team, and an
// invitation accepted or declined (the team or its owner blocked with it). The team open is team.js's; what
// changes here the lists hear through events.js (a team joined brings its knowledge bases).
import { api, human, seg } from "./api.js";
import { showDialog } from "./dialog.js";
import { $, el, said, theirs } from "./dom.js";
import { announce } from "./events.js";
import { t } from "./i18n.js";
import { state } from "./state.js";
import { closeTeam, loadTeam, openTeam } from "./team.js";
import { roleWords, splitTeams, teamStats } from "./team-rules.js";

/** @typedef {import("./state.js").Team} Team */

/**
 * The teams read again (GET /teams); a failure is said in the section, not over the page. The team open
 * is read again too, or closed when the person is no longer in it.
 */
export async function loadTeams() {
  try {
    const answer = await api("GET", "/teams");
    state.teams = answer.items || [];
    state.teamsLoaded = true;
    state.teamsError = "";
  } catch (error) {
    state.teamsError = t("teamsUnreadable", { error: human(error) });
  }
  renderTeams();
  const open = state.team;
  if (!open || state.teamsError) return;
  if (state.teams.some((team) => team.id === open.id && team.state === "member")) await loadTeam(open.id);
  else closeTeam(t("err_team_not_found"));
}

/**
 * A line of the section's own: what was done ("ok") or what went wrong ("error").
 * @param {string} message
 * @param {"ok" | "error"} [kind]
 */
function say(message, kind = "ok") {
  const line = $("teams-status");
  line.className = kind;
  line.textContent = message;
}

/**
 * Whose team it is, and the person's place in it: an invitation names who invited them and the owner; a
 * team joined names the owner (unless it is the person) and the person's role.
 * @param {Team} team
 */
function ownerLine(team) {
  const owner = team.owner || { user_id: "", display_name: "" };
  const ownerPart = [`${t("teamOwnedBy")}: `, theirs(owner.display_name || owner.user_id)];
  /** @type {(Node | string)[]} */
  const parts = [];
  if (team.state === "invited") {
    if (team.invited_by) parts.push(`${t("invitedBy")}: `, theirs(team.invited_by.display_name || team.invited_by.user_id), " · ");
    parts.push(...ownerPart);
  } else {
    if (team.role !== "owner") parts.push(...ownerPart, " · ");
    parts.push(t("yourRole", { role: roleWords(team) }));
  }
  return el("span", { class: "meta" }, ...parts);
}

/** @param {Team} team */
async function accept(team) {
  say("");
  try {
    await api("POST", `/teams/${seg(team.id)}/accept`);
  } catch (error) {
    say(human(error), "error");
    return;
  }
  say(t("joined", { name: team.name }));
  await loadTeams();
  // The buttons pressed are gone: the focus goes to the team, now among those joined.
  const joined = document.querySelector(`#team-list li[data-team="${CSS.escape(team.id)}"] button.link`);
  /** @type {HTMLElement} */ (joined || $("teams-heading")).focus();
  await announce("lists-stale").catch(() => {});  // the team's knowledge bases, now readable
}

/**
 * Declining, asked first: only this time, or blocking the team, or its owner (who then can neither invite
 * nor share with the person: docs/teams.md).
 * @param {Team} team
 */
function declineDialog(team) {
  const owner = team.owner ? team.owner.display_name || team.owner.user_id : "";
  /** @param {string} value @param {(Node | string)[]} words */
  const choice = (value, words) => el("label", {},
    el("input", { type: "radio", name: "block", value, checked: value === "" }), el("span", {}, ...words));
  const choices = el("fieldset", { class: "choices" }, el("legend", { text: t("declineHow") }),
    choice("", [t("declineOnly")]), choice("team", [t("blockTeam")]), choice("owner", said("blockOwner", owner)));
  showDialog(t("decline"), [el("p", {}, ...said("declineQuestion", team.name)), choices], [
    { label: t("decline"), cls: "danger", run: async () => {
      const picked = /** @type {HTMLInputElement | null} */ (choices.querySelector("input:checked"));
      const block = picked && picked.value ? picked.value : null;
      await api("POST", `/teams/${seg(team.id)}/decline`, { block });
      say(t("declined", { name: team.name }));
      await loadTeams();
      // The invitation is gone with its buttons: once the dialog has closed, the focus goes to the section.
      $("dialog").addEventListener("close", () => $("teams-heading").focus(), { once: true });
    } },
  ]);
}

/** @param {Team} team */
function inviteItem(team) {
  return el("li", { "data-invite": team.id },
    el("strong", { class: "team-name" }, theirs(team.name)),
    ownerLine(team),
    el("span", { class: "meta stats", text: teamStats(team) }),
    el("div", { class: "actions" },
      el("button", { type: "button", class: "primary", text: t("accept"), "aria-label": `${t("accept")} ${team.name}`, onclick: () => accept(team) }),
      el("button", { type: "button", class: "danger", text: t("decline"), "aria-label": `${t("decline")} ${team.name}`, onclick: () => declineDialog(team) })));
}

/** @param {Team} team */
function teamItem(team) {
  const current = Boolean(state.team && state.team.id === team.id);
  return el("li", { "data-team": team.id, class: current ? "current" : null },
    el("button", { type: "button", class: "link", text: team.name, "aria-current": current ? "true" : null, onclick: () => openTeam(team.id) }),
    ownerLine(team),
    el("span", { class: "meta stats", text: teamStats(team) }));
}

export function renderTeams() {
  const { invitations, joined } = splitTeams(state.teams);
  $("invites-part").hidden = !invitations.length;
  $("invites").replaceChildren(...invitations.map(inviteItem));
  const none = state.teamsLoaded && !joined.length;
  $("team-list").replaceChildren(...(none ? [el("li", { class: "muted", text: t("noTeams") })] : joined.map(teamItem)));
  $("teams-error").textContent = state.teamsError;
  $("teams-error").hidden = !state.teamsError;
  $("new-team").hidden = !state.teamsLoaded;  // shown once the teams are known, as the new-KB button
}

function closeForm() {
  $("new-team-form").hidden = true;
  $("new-team").focus();
}

/** The section's controls: the new team's form. */
export function wireTeams() {
  const input = /** @type {HTMLInputElement} */ ($("new-team-name"));
  $("new-team").addEventListener("click", () => {
    $("new-team-form").hidden = false;
    input.focus();
  });
  $("new-team-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = input.value.trim();
    if (!name) return;
    say("");
    try {
      const team = await api("POST", "/teams", { name });
      input.value = "";
      $("new-team-form").hidden = true;
      await loadTeams();
      await openTeam(team.id);
    } catch (error) {
      say(human(error), "error");
    }
  });
  /** @type {HTMLElement} */ ($("new-team-form").querySelector("[data-cancel]")).addEventListener("click", closeForm);
  $("new-team-form").addEventListener("keydown", (event) => { if (event.key === "Escape") closeForm(); });
}
