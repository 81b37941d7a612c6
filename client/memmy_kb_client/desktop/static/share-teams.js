// @ts-check
// The open knowledge base's teams, in its sharing dialog (share.js): the teams it is shared with, each
// unshared, and one of the owner's teams it is shared with. The Teams section hears of it (events.js).
import { api, human, seg } from "./api.js";
import { $, el, said, theirs } from "./dom.js";
import { announce } from "./events.js";
import { t } from "./i18n.js";
import { state } from "./state.js";
import { shareableTeams } from "./team-rules.js";

/** @typedef {import("./state.js").TeamShare} TeamShare */

/**
 * The dialog's part for teams, and how to read it again (once the dialog shows).
 * @param {import("./state.js").KnowledgeBase} kb
 * @returns {{nodes: Node[], refresh: () => Promise<void>}}
 */
export function teamSharing(kb) {
  const path = `/knowledge-bases/${seg(kb.id)}/teams`;
  const list = el("ul", { class: "members", id: "kb-teams", "aria-labelledby": "kb-teams-heading" });
  const picker = el("div", { class: "team-picker" });
  const status = el("p", { class: "ok", role: "status" });
  /** @param {unknown} error */
  const failed = (error) => { $("dialog-error").textContent = human(error); };
  // The button pressed is drawn anew (or gone): the focus goes to the team picker, else the dialog's close.
  const refocus = () => /** @type {HTMLElement} */ (document.getElementById("kb-team-select") || $("dialog-buttons").lastElementChild).focus();

  /** @param {TeamShare} share */
  const item = (share) => el("li", { "data-team": share.team_id },
    el("span", {}, theirs(share.name)),
    el("button", { type: "button", class: "danger", text: t("unshare"), "aria-label": `${t("unshare")} ${share.name}`, onclick: async () => {
      status.textContent = "";
      try {
        await api("DELETE", `${path}/${seg(share.team_id)}`);
        await announce("teams-stale");
        await refresh();
        refocus();
      } catch (error) {
        failed(error);
      }
    } }));

  /** @param {string[]} shared the ids of the teams it is shared with */
  const drawPicker = (shared) => {
    const teams = shareableTeams(state.teams, shared);
    if (!teams.length) { picker.replaceChildren(el("p", { class: "muted", text: t("noTeamToShare") })); return; }
    const select = el("select", { id: "kb-team-select", name: "team" }, ...teams.map((team) => el("option", { value: team.id, text: team.name })));
    const share = el("button", { type: "button", id: "kb-team-share", text: t("shareWithTeam"), onclick: async () => {
      status.textContent = "";
      const team = teams.find((one) => one.id === select.value);
      if (!team) return;
      try {
        await api("POST", path, { team_id: team.id });
        status.replaceChildren(...said("sharedWithTeam", team.name));
        await announce("teams-stale");
        await refresh();
        refocus();
      } catch (error) {
        failed(error);
      }
    } });
    picker.replaceChildren(el("label", { for: "kb-team-select", text: t("shareTeamLabel") }), el("div", { class: "row add-member" }, select, share));
  };

  const refresh = async () => {
    /** @type {TeamShare[]} */
    const shares = (await api("GET", path)).items || [];
    list.replaceChildren(...(shares.length ? shares.map(item) : [el("li", { class: "muted", text: t("noTeamShares") })]));
    if (!state.teamsLoaded) await announce("teams-stale");
    drawPicker(shares.map((share) => share.team_id));
  };
  return { nodes: [el("h3", { id: "kb-teams-heading", text: t("teamShares") }), list, picker, status], refresh };
}
