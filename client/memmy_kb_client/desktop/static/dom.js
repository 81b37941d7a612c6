// @ts-check
// Building the page's nodes, and the notice above it.
import { COMMANDS, t } from "./i18n.js";

/**
 * The page's element of this id (index.html has each one the modules ask for).
 * @param {string} id
 * @returns {HTMLElement}
 */
export const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** @typedef {Node | string | null | undefined} Child */

/**
 * A new element: ``attrs`` set ("class", "text", "on…" listeners, any other as an attribute; undefined,
 * null and false left out, true as an empty one), then its children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any> | null} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/**
 * Another person's text (a KB, sharer or document name) set apart in a <bdi>: a bidi override or
 * right-to-left letters in it cannot reorder the page's words around it ("Shared by ...").
 * @param {unknown} text
 */
export const theirs = (text) => el("bdi", { text: String(text ?? "") });

/**
 * A sentence of the page with another person's text where its ``{name}`` stands, that text in a <bdi>.
 * @param {string} key
 * @param {unknown} name
 * @param {Record<string, unknown>} [vars] the sentence's other values
 * @returns {(Node | string)[]}
 */
export function said(key, name, vars) {
  const [before, ...rest] = t(key, { ...(vars || {}), name: "\u0000" }).split("\u0000");
  return rest.length ? [before, theirs(name), rest.join("")] : [before];
}

/**
 * A message cut at the commands it names: plain text, and ``{code}`` for each command, the longest first
 * where two start at the same place.
 * @param {string} message
 * @param {readonly string[]} commands
 * @returns {(string | {code: string})[]}
 */
export function splitCommands(message, commands) {
  const named = commands.filter(Boolean).sort((a, b) => b.length - a.length);
  /** @type {(string | {code: string})[]} */
  const parts = [];
  let rest = message;
  while (rest) {
    /** @type {[number, string] | undefined} */
    const found = named.map((c) => /** @type {[number, string]} */ ([rest.indexOf(c), c]))
      .filter(([at]) => at >= 0).sort((a, b) => a[0] - b[0])[0];
    if (!found) { parts.push(rest); break; }
    const [at, command] = found;
    parts.push(rest.slice(0, at), { code: command });
    rest = rest.slice(at + command.length);
  }
  return parts;
}

/**
 * A message above the page; the commands it names (COMMANDS) set as code. Empty: the notice goes.
 * @param {string} message
 */
export function notice(message) {
  const box = $("notice");
  box.replaceChildren();
  if (!message) { box.hidden = true; return; }
  for (const part of splitCommands(message, Object.values(COMMANDS))) {
    box.append(typeof part === "string" ? part : el("code", { text: part.code }));
  }
  box.hidden = false;
}
