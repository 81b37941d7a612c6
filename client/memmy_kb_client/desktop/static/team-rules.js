// @ts-check
// What a team's member may do, as docs/teams.md's roles table says (the cloud decides; the page offers only
// what it would allow), and how a team is summed up: pure, unit-tested (tests/unit/page/team-rules.test.js).
import { language, t, tn } from "./i18n.js";

/** @typedef {import("./state.js").Team} Team */
/** @typedef {import("./state.js").TeamMember} TeamMember */
/** @typedef {import("./state.js").TeamRole} TeamRole */
/** @typedef {import("./state.js").TeamKnowledgeBase} TeamKnowledgeBase */
/** @typedef {"cancel" | "remove" | "makeAdmin" | "makeMember" | "makeOwner"} MemberAction */
/** @typedef {"invite" | "rename" | "delete" | "leave"} TeamAction */

/** @type {Record<string, number>} */
const RANK = { owner: 0, admin: 1, member: 2 };

/**
 * What ``caller`` may do to ``member``'s row: the owner to anyone else (roles, ownership to one who
 * joined, removal), an admin to members and invitations only (not the owner, not another admin), a member
 * nothing. Oneself: nothing here (leaving is the team's action).
 * @param {{role: TeamRole, user_id: string}} caller
 * @param {TeamMember} member
 * @returns {MemberAction[]}
 */
export function memberActions(caller, member) {
  if (member.user_id === caller.user_id || member.role === "owner") return [];
  if (caller.role === "member" || (caller.role === "admin" && member.role === "admin")) return [];
  if (member.state === "invited") return ["cancel"];
  /** @type {MemberAction[]} */
  const actions = [];
  if (caller.role === "owner") actions.push(member.role === "admin" ? "makeMember" : "makeAdmin", "makeOwner");
  actions.push("remove");
  return actions;
}

/**
 * The team's own actions for the caller's role: invite (owner, admin), rename (owner, admin), delete
 * (owner), leave (anyone but the owner, who transfers or deletes first).
 * @param {TeamRole} role
 * @returns {TeamAction[]}
 */
export function teamActions(role) {
  if (role === "owner") return ["invite", "rename", "delete"];
  if (role === "admin") return ["invite", "rename", "leave"];
  return ["leave"];
}

/**
 * Whether the caller may unshare ``kb`` from the team: its owner and admins any, a member their own.
 * @param {TeamRole} role
 * @param {TeamKnowledgeBase} kb
 * @param {string} me the caller's user id
 */
export function canUnshare(role, kb, me) {
  return role === "owner" || role === "admin" || Boolean(kb.owner && kb.owner.user_id === me);
}

/**
 * @param {{name: string}} a
 * @param {{name: string}} b
 */
const byName = (a, b) => a.name.localeCompare(b.name, language() === "en" ? "en" : "zh-CN");

/**
 * The caller's open invitations and the teams they belong to, each by name.
 * @param {readonly Team[]} teams
 * @returns {{invitations: Team[], joined: Team[]}}
 */
export function splitTeams(teams) {
  return {
    invitations: teams.filter((team) => team.state === "invited").sort(byName),
    joined: teams.filter((team) => team.state !== "invited").sort(byName),
  };
}

/**
 * The teams a KB can still be shared with: those the caller has joined, not already sharing it.
 * @param {readonly Team[]} teams
 * @param {readonly string[]} sharedWith the ids of the teams it is shared with
 * @returns {Team[]}
 */
export function shareableTeams(teams, sharedWith) {
  return splitTeams(teams).joined.filter((team) => !sharedWith.includes(team.id));
}

/**
 * A team's members as listed: the owner, the admins, the members, then the invitations; by name within.
 * @param {readonly TeamMember[]} members
 * @returns {TeamMember[]}
 */
export function sortMembers(members) {
  /** @param {TeamMember} m */
  const rank = (m) => (m.state === "invited" ? 3 : RANK[m.role] ?? 2);
  const names = (/** @type {TeamMember} */ a, /** @type {TeamMember} */ b) =>
    (a.display_name || a.user_id).localeCompare(b.display_name || b.user_id, language() === "en" ? "en" : "zh-CN");
  return [...members].sort((a, b) => rank(a) - rank(b) || names(a, b));
}

/**
 * A member's role in words: invited, owner, admin or member.
 * @param {{role: TeamRole, state: string}} member
 */
export function roleWords(member) {
  if (member.state === "invited") return t("roleInvited");
  return t(member.role === "owner" ? "roleOwner" : member.role === "admin" ? "roleAdmin" : "roleMember");
}

/**
 * A team in one line: its members, open invitations (when any) and KBs.
 * @param {Pick<Team, "member_count" | "invited_count" | "kb_count">} team
 */
export function teamStats(team) {
  const parts = [tn("membersCount", team.member_count || 0)];
  if (team.invited_count) parts.push(tn("invitedCount", team.invited_count));
  parts.push(tn("kbsCount", team.kb_count || 0));
  return parts.join(" · ");
}
