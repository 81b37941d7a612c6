// @ts-check
// Sharing the open knowledge base: its readers, one added by user ID, phone or email, one removed; and the
// teams it is shared with (share-teams.js).
import { api, human, seg } from "./api.js";
import { showDialog } from "./dialog.js";
import { $, el, theirs } from "./dom.js";
import { t } from "./i18n.js";
import { teamSharing } from "./share-teams.js";
import { state } from "./state.js";

/** @typedef {{user_id: string, display_name: string, role: string}} Member */

export async function shareDialog() {
  const kb = /** @type {import("./state.js").KnowledgeBase} */ (state.kb);
  const input = el("input", { id: "member-identifier", name: "identifier", maxlength: 320, autocomplete: "off" });
  const add = el("button", { type: "submit", class: "primary", text: t("add") });
  const list = el("ul", { class: "members", "aria-label": t("members") });
  const status = el("p", { class: "ok", role: "status" });
  const refresh = async () => {
    /** @type {Member[]} */
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
  const teams = teamSharing(kb);
  showDialog(`${t("share")}: ${kb.name}`, [
    el("label", { for: "member-identifier", text: t("memberLabel") }),
    el("div", { class: "row add-member" }, input, add),
    status,
    el("h3", { text: t("members") }), list,
    ...teams.nodes,
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
  try { await Promise.all([refresh(), teams.refresh()]); } catch (error) { $("dialog-error").textContent = human(error); }
}
