// @ts-check
// What the page sends and how it reads a refusal: an id's path segment, and each error's sentence.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { ApiError, escapeAll, human, seg } from "../../../client/memmy_kb_client/desktop/static/api.js";
import { setLanguage } from "../../../client/memmy_kb_client/desktop/static/i18n.js";

beforeEach(() => setLanguage("en"));

test("every character but A-Z a-z 0-9 - _ ~ is escaped, the dot and !'()* too", () => {
  assert.equal(escapeAll("aZ09-_~"), "aZ09-_~");
  assert.equal(escapeAll(".!'()*"), "%2E%21%27%28%29%2A");
  assert.equal(escapeAll("张 三/"), "%E5%BC%A0%20%E4%B8%89%2F");
});

test("an id goes into a path escaped twice, so the dot segments reach the service", () => {
  // The pairs tests/unit/client/desktop/test_desktop_page.py checks the service against.
  assert.equal(seg("."), "%252E");
  assert.equal(seg(".."), "%252E%252E");
  assert.equal(seg("auth0|1"), "auth0%257C1");
  assert.equal(seg("%2E"), "%25252E");
  assert.equal(seg("kb_1"), "kb_1");
});

test("a refusal the page has words for is said in them, with how long to wait", () => {
  const limited = new ApiError(429, "recall_rate_limited", "slow down", { retry_after_seconds: 7 });
  assert.match(human(limited), /ask again in 7 s\.$/);
  const undated = new ApiError(429, "recall_rate_limited", "slow down", { retry_after_seconds: "soon" });
  assert.match(human(undated), /ask again in 1 s\.$/);
  assert.equal(human(new ApiError(409, "already_member")), "They already have access.");
});

test("a refusal without words of its own is said by its kind", () => {
  assert.equal(human(new ApiError(404, "kb_not_found")), "Not found: it may have been deleted, or is no longer shared with you.");
  assert.equal(human(new ApiError(400, "file_not_found")), human(new ApiError(404, "")));
  assert.equal(human(new ApiError(429, "")), "Too many attempts: wait a little and try again.");
  assert.equal(human(new ApiError(413, "")), "The file is too large.");
  assert.equal(human(new ApiError(400, "unsupported_media")), "This kind of file is not supported.");
  assert.equal(human(new ApiError(403, "")), "Only the owner can do that.");
  assert.equal(human(new ApiError(409, "")), "That conflicts with something already there (the same name?).");
  assert.equal(human(new ApiError(422, "", "name too long")), "Please check what you typed. (name too long)");
  assert.equal(human(new ApiError(500, "", "boom")), "Something went wrong: boom");
});

test("anything else thrown is said with its message", () => {
  assert.equal(human(new Error("storage answered 500")), "Something went wrong: storage answered 500");
  assert.equal(human("plain"), "Something went wrong: plain");
  setLanguage("zh");
  assert.equal(human(new Error("x")), "出错了：x");
});
