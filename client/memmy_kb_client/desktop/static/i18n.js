// @ts-check
// The page's language and its sentences in it: ``t`` fills a sentence of text.js (text-sync.js, text-teams.js, text-connections.js) with
// its values and the commands the person is told to run.
import { REASONS, TEXT as WORDS } from "./text.js";
import { SYNC_TEXT } from "./text-sync.js";
import { TEAM_TEXT } from "./text-teams.js";
import { CONNECTION_TEXT } from "./text-connections.js";

/** @typedef {import("./text.js").Lang} Lang */
/** @typedef {Record<string, unknown>} Vars */

/** Every sentence of the page, by language. */
export const TEXT = {
  zh: { ...WORDS.zh, ...SYNC_TEXT.zh, ...TEAM_TEXT.zh, ...CONNECTION_TEXT.zh },
  en: { ...WORDS.en, ...SYNC_TEXT.en, ...TEAM_TEXT.en, ...CONNECTION_TEXT.en },
};

/** @type {Lang} */
let lang = "zh";

// The commands the page tells the person to run, as they can run them (the service says which: its own
// path to memmy-kb, and the local stack's command when the stack runs it).
/** @type {{open: string, login: string, stack: string}} */
export const COMMANDS = { open: "memmy-kb desktop open", login: "memmy-kb desktop login", stack: "" };

/** @returns {Lang} */
export function language() {
  return lang;
}

/** @param {Lang} chosen */
export function setLanguage(chosen) {
  lang = chosen;
}

/** The commands the service named (``/api/session``'s ``commands``), over the defaults.
 * @param {Partial<typeof COMMANDS>} given */
export function setCommands(given) {
  Object.assign(COMMANDS, given);
}

/**
 * The page's language: the one asked for (``?lang=``), else the browser's first (Chinese unless English).
 * @param {string | null} asked
 * @param {readonly string[]} browser the browser's languages, its first preferred
 * @returns {Lang}
 */
export function chooseLanguage(asked, browser) {
  if (asked === "en" || asked === "zh") return asked;
  const first = (browser[0] || "").toLowerCase();
  return first.startsWith("en") ? "en" : "zh";
}

/**
 * A sentence in the page's language (else in English, else the key), ``{name}`` filled from ``vars`` and
 * the commands.
 * @param {string} key
 * @param {Vars} [vars]
 * @returns {string}
 */
export function t(key, vars) {
  let text = TEXT[lang][key] ?? TEXT.en[key] ?? key;
  // A function, not a string, as the replacement: "$&" or "$'" in a name are text, not patterns.
  for (const [name, value] of Object.entries({ ...COMMANDS, ...(vars || {}) })) {
    text = text.replaceAll(`{${name}}`, () => String(value));
  }
  return text;
}

/**
 * A count in words: the key's "One" form for one where the language has it ("1 file"; Chinese has none).
 * @param {string} key
 * @param {number} n
 * @param {Vars} [vars]
 * @returns {string}
 */
export function tn(key, n, vars) {
  return t(n === 1 && TEXT[lang][`${key}One`] ? `${key}One` : key, { n, ...(vars || {}) });
}

/**
 * A failure's reason in the page's language; the cloud's own sentence only for a code the page lacks.
 * @param {{reason_code?: string | null, reason?: string | null}} entry
 * @returns {string}
 */
export function reasonText(entry) {
  return (entry.reason_code && REASONS[lang][entry.reason_code]) || entry.reason || "";
}
