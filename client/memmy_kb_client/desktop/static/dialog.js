// @ts-check
// The page's one dialog (index.html's <dialog>): a question, a name, a confirmation.
import { human } from "./api.js";
import { $, el } from "./dom.js";
import { t } from "./i18n.js";

/**
 * A dialog's button: the first is the default (Enter); ``run`` returning false keeps the dialog open; one
 * with a ``node`` (a button already placed in the body) is wired there instead of the row.
 * @typedef {{label: string, cls?: string, run: () => unknown, node?: HTMLElement}} DialogButton
 */

/**
 * @param {string} title
 * @param {(Node | string)[]} body
 * @param {DialogButton[]} buttons
 * @param {string} [closeLabel]
 */
export function showDialog(title, body, buttons, closeLabel) {
  const dialog = /** @type {HTMLDialogElement} */ ($("dialog"));
  $("dialog-title").textContent = title;
  $("dialog-body").replaceChildren(...body);
  $("dialog-error").textContent = "";
  const row = $("dialog-buttons");
  row.replaceChildren();
  /** @param {DialogButton} button */
  const run = async (button) => {
    $("dialog-error").textContent = "";
    try {
      if ((await button.run()) !== false) dialog.close();
    } catch (error) {
      $("dialog-error").textContent = human(error);
    }
  };
  buttons.forEach((button, index) => {
    /** @param {Event} event */
    const onclick = (event) => { event.preventDefault(); run(button); };
    if (button.node) { button.node.onclick = onclick; return; }
    row.append(el("button", {
      type: index === 0 ? "submit" : "button", class: button.cls, text: button.label, onclick,
    }));
  });
  row.append(el("button", { type: "button", class: "quiet", text: closeLabel || t("cancel"), onclick: () => dialog.close() }));
  $("dialog-form").onsubmit = (event) => { event.preventDefault(); if (buttons.length) run(buttons[0]); };
  dialog.showModal();
  const first = /** @type {HTMLElement | null} */ (dialog.querySelector("#dialog-body input, #dialog-body select"));
  if (first) first.focus();
}

/**
 * Tab and Shift+Tab go round the open dialog's controls and never leave it; Escape closes it (the
 * browser's own "cancel" of a modal <dialog>).
 * @param {KeyboardEvent} event
 */
export function trapFocus(event) {
  if (event.key !== "Tab") return;
  const dialog = $("dialog");
  /** @type {HTMLElement[]} */
  const stops = Array.from(dialog.querySelectorAll("button, input, select, textarea, a[href], [tabindex]:not([tabindex='-1'])"));
  const shown = stops.filter((node) => !(/** @type {HTMLButtonElement} */ (node)).disabled && node.offsetParent !== null);
  if (!shown.length) return;
  const first = shown[0];
  const last = shown[shown.length - 1];
  const inside = dialog.contains(document.activeElement);
  if (event.shiftKey && (document.activeElement === first || !inside)) { event.preventDefault(); last.focus(); }
  else if (!event.shiftKey && (document.activeElement === last || !inside)) { event.preventDefault(); first.focus(); }
}

/**
 * A name asked for (a new folder, a rename), ``save`` given it trimmed.
 * @param {string} title
 * @param {string} value
 * @param {(name: string) => unknown} save
 */
export function askName(title, value, save) {
  const input = el("input", { name: "name", maxlength: 200, required: true });
  input.value = value || "";
  showDialog(title, [el("label", {}, el("span", { text: t("name") }), input)], [
    { label: t("save"), cls: "primary", run: () => (input.value.trim() ? save(input.value.trim()) : false) },
  ]);
}

/**
 * A destructive action asked first.
 * @param {string} title
 * @param {string} message
 * @param {string} label
 * @param {() => unknown} action
 * @param {string} [warning]
 */
export function confirmDanger(title, message, label, action, warning) {
  const body = [el("p", { text: message })];
  if (warning) body.push(el("p", { class: "warn", text: warning }));
  showDialog(title, body, [{ label, cls: "danger", run: action }]);
}
