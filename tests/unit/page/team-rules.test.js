// @ts-check
// What the page offers a team's member, by docs/teams.md's roles table, and how a team is summed up.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { setLanguage } from "../../../client/memmy_kb_client/desktop/static/i18n.js";
import {
  canUnshare, memberActions, roleWords, shareableTeams, sortMembers, splitTeams, teamActions, teamStats,
} from "../../../client/memmy_kb_client/desktop/static/team-rules.js";

/** @typedef {import("../../../client/memmy_kb_client/desktop/static/state.js").TeamMember} TeamMember */
/** @typedef {import("../../../client/memmy_kb_client/desktop/static/state.js").Team} Team */
/** @typedef {import("../../../client/memmy_kb_client/desktop/static/state.js").TeamRole} TeamRole */

beforeEach(() => setLanguage("en"));

/**
 * @param {string} user_id
 * @param {TeamRole} role
 * @param {"member" | "invited"} [state]
 * @returns {TeamMember}
 */
const member = (user_id, role, state = "member") => ({ user_id, display_name: user_id.toUpperCase(), role, state });

/**
 * @param {string} id
 * @param {string} name
 * @param {"member" | "invited"} state
 * @returns {Team}
 */
const team = (id, name, state) => ({
  id, name, state, role: "member", owner: { user_id: "o", display_name: "O" }, member_count: 2, invited_count: 0, kb_count: 1,
});

const OWNER = member("o", "owner");
const ADMIN = member("a", "admin");
const OTHER_ADMIN = member("a2", "admin");
const MEMBER = member("m", "member");
const INVITED = member("i", "member", "invited");

test("the owner changes roles, hands over ownership and removes; cancels an invitation", () => {
  const caller = { role: /** @type {TeamRole} */ ("owner"), user_id: "o" };
  assert.deepEqual(memberActions(caller, MEMBER), ["makeAdmin", "makeOwner", "remove"]);
  assert.deepEqual(memberActions(caller, ADMIN), ["makeMember", "makeOwner", "remove"]);
  assert.deepEqual(memberActions(caller, INVITED), ["cancel"]);
  assert.deepEqual(memberActions(caller, OWNER), []);
});

test("an admin removes members and cancels invitations, never the owner nor another admin, and sets no role", () => {
  const caller = { role: /** @type {TeamRole} */ ("admin"), user_id: "a" };
  assert.deepEqual(memberActions(caller, MEMBER), ["remove"]);
  assert.deepEqual(memberActions(caller, INVITED), ["cancel"]);
  assert.deepEqual(memberActions(caller, OWNER), []);
  assert.deepEqual(memberActions(caller, OTHER_ADMIN), []);
  assert.deepEqual(memberActions(caller, ADMIN), [], "oneself: leaving is the team's action");
});

test("a member acts on nobody", () => {
  const caller = { role: /** @type {TeamRole} */ ("member"), user_id: "m" };
  for (const other of [OWNER, ADMIN, MEMBER, INVITED, member("m2", "member")]) assert.deepEqual(memberActions(caller, other), []);
});

test("the team's own actions follow the role: the owner cannot leave, only the owner deletes", () => {
  assert.deepEqual(teamActions("owner"), ["invite", "rename", "delete"]);
  assert.deepEqual(teamActions("admin"), ["invite", "rename", "leave"]);
  assert.deepEqual(teamActions("member"), ["leave"]);
});

test("any KB is unshared by the team's owner or admins, a member's own KB by that member", () => {
  const kb = { id: "kb", name: "K", owner: { user_id: "m", display_name: "M" } };
  assert.equal(canUnshare("owner", kb, "o"), true);
  assert.equal(canUnshare("admin", kb, "a"), true);
  assert.equal(canUnshare("member", kb, "m"), true);
  assert.equal(canUnshare("member", kb, "m2"), false);
});

test("invitations and teams joined are apart, each by name; a KB is offered only teams joined and not yet sharing it", () => {
  const teams = [team("t3", "Sales", "member"), team("t1", "Bravo", "invited"), team("t2", "Alpha", "member")];
  const { invitations, joined } = splitTeams(teams);
  assert.deepEqual(invitations.map((one) => one.id), ["t1"]);
  assert.deepEqual(joined.map((one) => one.id), ["t2", "t3"]);
  assert.deepEqual(shareableTeams(teams, ["t3"]).map((one) => one.id), ["t2"]);
  assert.deepEqual(shareableTeams(teams, ["t2", "t3"]), []);
});

test("members are listed owner, admins, members, then invitations, by name within", () => {
  const listed = sortMembers([INVITED, member("z", "member"), MEMBER, OTHER_ADMIN, OWNER, ADMIN]);
  assert.deepEqual(listed.map((one) => one.user_id), ["o", "a", "a2", "m", "z", "i"]);
});

test("a role and a team's counts in words, in both languages", () => {
  assert.equal(roleWords(INVITED), "Invited, not yet joined");
  assert.equal(roleWords(ADMIN), "Admin");
  assert.equal(teamStats({ member_count: 1, invited_count: 0, kb_count: 1 }), "1 member · 1 knowledge base");
  assert.equal(teamStats({ member_count: 3, invited_count: 2, kb_count: 0 }), "3 members · 2 invited · 0 knowledge bases");
  setLanguage("zh");
  assert.equal(roleWords(OWNER), "所有者");
  assert.equal(teamStats({ member_count: 3, invited_count: 2, kb_count: 4 }), "3 名成员 · 2 人待接受 · 4 个知识库");
});
