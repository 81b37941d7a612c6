// @ts-check
// The page's requests: every one goes to the local service (/api/...), which adds the cloud login;
// state-changing ones carry the session's CSRF token. Upload bytes go from the browser straight to storage
// by the presigned POST the cloud hands out.
import { TEXT, t } from "./i18n.js";
import { state } from "./state.js";

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} [message]
   * @param {Record<string, any> | null} [details] e.g. version_conflict's current version
   */
  constructor(status, code, message, details) {
    super(message || code);
    this.status = status;
    this.code = code;
    this.details = details || null;
  }
}

/**
 * The local service's answer to a request under /api, as JSON; an ``ApiError`` when it refuses.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {Record<string, string>} [headers]
 * @returns {Promise<any>}
 */
export async function api(method, path, body, headers) {
  /** @type {Record<string, string>} */
  const sent = { Accept: "application/json", ...(headers || {}) };
  if (method !== "GET") sent["X-CSRF-Token"] = state.csrf;
  if (body !== undefined) sent["Content-Type"] = "application/json";
  const response = await fetch(`/api${path}`, {
    method, headers: sent, credentials: "same-origin", cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  /** @type {any} */
  let data = {};
  if (response.status !== 204) {
    try { data = await response.json(); } catch (_) { data = {}; }
  }
  if (!response.ok) {
    const error = data.error || {};
    throw new ApiError(response.status, error.code || "", error.message || data.message || response.statusText, error.details);
  }
  return data;
}

/**
 * A failure as the sentence the person reads, in the page's language.
 * @param {unknown} error
 * @returns {string}
 */
export function human(error) {
  if (!(error instanceof ApiError)) {
    const thrown = /** @type {any} */ (error);
    return t("err_generic", { message: thrown.message || String(thrown) });
  }
  const code = error.code || "";
  // A refusal that asks to wait (429) says how long: {seconds} in its sentence.
  const wait = error.details && Number.isInteger(error.details.retry_after_seconds) ? error.details.retry_after_seconds : 1;
  if (TEXT.en[`err_${code}`]) return t(`err_${code}`, { seconds: wait });
  if (code.endsWith("not_found") || error.status === 404) return t("err_not_found");
  if (error.status === 429 || code.includes("rate")) return t("err_rate_limited");
  if (error.status === 413 || code.includes("too_large")) return t("err_too_large");
  if (code.includes("unsupported") || error.status === 415) return t("err_unsupported");
  if (error.status === 403) return t("err_forbidden");
  if (error.status === 409) return t("err_conflict");
  if (error.status === 422) return `${t("err_validation_error")} (${error.message})`;
  return t("err_generic", { message: error.message });
}

/**
 * Every character but A-Z a-z 0-9 - _ ~ as %XX of its UTF-8 bytes: "." and "!'()*" too.
 * @param {string} text
 */
export const escapeAll = (text) =>
  encodeURIComponent(text).replace(/[.!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * An id as a path segment, escaped twice: browsers read "%2E" as "." and drop dot segments, so a user id
 * "." or ".." escaped once would never arrive. The desktop service takes both layers off and sends the
 * cloud the id escaped once (desktop/page.py cloud_segment).
 * @param {string} id
 */
export const seg = (id) => escapeAll(escapeAll(id));

/** A new Idempotency-Key. */
export const newKey = () => (crypto.randomUUID ? crypto.randomUUID() : Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join(""));

/**
 * A file sent to storage by the presigned POST in ``ticket``; ``progress`` told the fraction sent.
 * @param {{url: string, fields: Record<string, string>}} ticket
 * @param {File} file
 * @param {(fraction: number) => void} progress
 * @returns {Promise<void>}
 */
export function sendToStorage(ticket, file, progress) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const [key, value] of Object.entries(ticket.fields)) form.append(key, value);
    form.append("file", file, file.name);
    const request = new XMLHttpRequest();
    request.open("POST", ticket.url);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) progress(event.loaded / event.total);
    };
    request.onload = () => (request.status >= 200 && request.status < 300
      ? resolve() : reject(new Error(`storage answered ${request.status}`)));
    request.onerror = () => reject(new Error("storage could not be reached"));
    request.send(form);
  });
}
