// @ts-check
// What the page holds and works out from it: the folder shown, the open KB after a reload, where an entry
// may move, the synced folders' changes between two readings, and the panels' events.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { splitCommands } from "../../../client/memmy_kb_client/desktop/static/dom.js";
import { announce, listen } from "../../../client/memmy_kb_client/desktop/static/events.js";
import { setLanguage } from "../../../client/memmy_kb_client/desktop/static/i18n.js";
import { moveTargets } from "../../../client/memmy_kb_client/desktop/static/kb.js";
import { linkWords, linkedChanged, linksDelayMs, passedSince } from "../../../client/memmy_kb_client/desktop/static/links.js";
import { folderOf, reopened } from "../../../client/memmy_kb_client/desktop/static/state.js";

/** @typedef {import("../../../client/memmy_kb_client/desktop/static/state.js").Link} Link */

beforeEach(() => setLanguage("en"));

/** @param {string} dir @param {Partial<Link>} [more] @returns {Link} */
const link = (dir, more) => ({ dir, kb_id: "kb_1", state: "idle", ...more });

test("the folder shown is the trail's last, none at the root", () => {
  assert.equal(folderOf([]), null);
  assert.equal(folderOf([{ id: "a", name: "A" }, { id: "b", name: "B" }]), "b");
});

test("the open KB after the lists are read again is its fresh entry, or none once it is gone", () => {
  const fresh = { id: "kb_1", name: "Renamed" };
  assert.equal(reopened([{ id: "kb_0", name: "x" }, fresh], { id: "kb_1", name: "Old" }), fresh);
  assert.equal(reopened([], { id: "kb_1", name: "Old" }), undefined);
});

test("an entry may move to the top, one level up, or a folder shown but itself", () => {
  const folders = [{ id: "f1", name: "One" }, { id: "f2", name: "Two" }];
  assert.deepEqual(moveTargets([], folders, "f1"), [["f2", "Two"]]);
  assert.deepEqual(moveTargets([{ id: "a", name: "A" }], folders, "x"),
    [["", "Top level"], ["f1", "One"], ["f2", "Two"]]);
  assert.deepEqual(moveTargets([{ id: "a", name: "A" }, { id: "b", name: "B" }], [], "x"),
    [["", "Top level"], ["a", "Up one level"]]);
});

test("a folder linked or unlinked is a change; a pass that ran is not", () => {
  assert.equal(linkedChanged(undefined, []), false);
  assert.equal(linkedChanged(undefined, [link("/a")]), true);
  assert.equal(linkedChanged([link("/a")], [link("/a", { last_pass_at: 5, state: "syncing" })]), false);
  assert.equal(linkedChanged([link("/a")], [link("/a", { kb_id: "kb_2" })]), true);
  assert.equal(linkedChanged([link("/a"), link("/b")], [link("/a")]), true);
});

test("the links whose pass ran since the last reading; none on the first", () => {
  const links = [link("/a", { last_pass_at: 2 }), link("/b", { last_pass_at: 1 }), link("/c")];
  assert.deepEqual(passedSince(undefined, links), []);
  assert.deepEqual(passedSince({ "/a": 1, "/b": 1 }, links).map((l) => l.dir), ["/a"]);
  assert.deepEqual(passedSince({}, links).map((l) => l.dir), ["/a", "/b"]);
});

test("the links are read again soon while one syncs or waits", () => {
  assert.equal(linksDelayMs([link("/a"), link("/b", { state: "syncing" })]), 2000);
  assert.equal(linksDelayMs([link("/a", { state: "waiting" })]), 2000);
  assert.equal(linksDelayMs([link("/a"), link("/b", { state: "paused" })]), 10000);
  assert.equal(linksDelayMs([]), 10000);
});

test("a link's state in words: gone first, then paused, in error, partly done", () => {
  assert.match(linkWords(link("/a", { state: "paused" }), true), /^Its knowledge base is gone/);
  assert.equal(linkWords(link("/a", { state: "paused", paused: "the folder is empty" }), false),
    "Paused: the folder is empty. Nothing is deleted until you confirm.");
  assert.equal(linkWords(link("/a", { state: "error", error: "disk" }), false), "Error: disk");
  assert.equal(linkWords(link("/a", { wait_for_room: 2 }), false), "Up to date but for the files below");
  assert.equal(linkWords(link("/a", { failed: [{ path: "x", reason: "y" }] }), false), "Up to date but for the files below");
  assert.equal(linkWords(link("/a"), false), "Up to date");
});

test("a notice is cut at the commands it names, the longest where two start together", () => {
  assert.deepEqual(splitCommands("run memmy-kb desktop login now", ["memmy-kb desktop", "memmy-kb desktop login"]),
    ["run ", { code: "memmy-kb desktop login" }, " now"]);
  assert.deepEqual(splitCommands("a x b y", ["y", "x", ""]), ["a ", { code: "x" }, " b ", { code: "y" }]);
  assert.deepEqual(splitCommands("nothing to set", ["memmy-kb"]), ["nothing to set"]);
  assert.deepEqual(splitCommands("", ["x"]), []);
});

test("an announcement reaches its listeners at once and waits for the work they start", async () => {
  /** @type {string[]} */
  const heard = [];
  listen("kb-shown", () => { heard.push("shown"); });
  listen("lists-stale", () => new Promise((resolve) => setTimeout(() => { heard.push("lists"); resolve(undefined); }, 5)));
  announce("kb-shown");
  assert.deepEqual(heard, ["shown"]);
  await announce("lists-stale");
  assert.deepEqual(heard, ["shown", "lists"]);
  listen("lists-stale", () => Promise.reject(new Error("offline")));
  await assert.rejects(announce("lists-stale"), /offline/);
});
