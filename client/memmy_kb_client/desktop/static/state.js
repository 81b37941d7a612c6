// @ts-check
// What the page holds between requests, and the shapes the cloud answers in (as the page reads them).

/** @typedef {{display_name?: string, user_id?: string, contact?: string}} Owner */
/**
 * @typedef {object} KnowledgeBase
 * @property {string} id
 * @property {string} name
 * @property {string} [role] "owner", or a reader's
 * @property {boolean} [recall]
 * @property {Owner} [owner]
 * @property {number} [file_count]
 * @property {number} [bytes_used]
 * @property {KbTeam[]} [teams] the teams through which the person reads it (empty: owned or shared directly)
 */
/** @typedef {{id: string, name: string}} KbTeam */
/** @typedef {{user_id: string, display_name: string}} TeamPerson */
/** @typedef {"owner" | "admin" | "member"} TeamRole */
/**
 * A team as its member (or invitee) sees it in GET /teams: ``role`` and ``state`` are the caller's own.
 * @typedef {object} Team
 * @property {string} id
 * @property {string} name
 * @property {TeamPerson} owner
 * @property {TeamRole} role
 * @property {"member" | "invited"} state
 * @property {TeamPerson | null} [invited_by]
 * @property {number} member_count
 * @property {number} invited_count
 * @property {number} kb_count
 * @property {string} [created_at]
 */
/**
 * @typedef {object} TeamMember
 * @property {string} user_id
 * @property {string} display_name
 * @property {TeamRole} role
 * @property {"member" | "invited"} state
 * @property {string | null} [invited_at]
 * @property {string | null} [joined_at]
 */
/** @typedef {{id: string, name: string, owner: TeamPerson, shared_at?: string}} TeamKnowledgeBase */
/** @typedef {Team & {members: TeamMember[], knowledge_bases: TeamKnowledgeBase[]}} TeamDetail */
/** @typedef {{team_id: string, name: string, shared_by: TeamPerson, shared_at?: string}} TeamShare */
/** @typedef {{id: string | null, name: string}} Crumb */
/** @typedef {{id: string, name: string, parent_id?: string | null}} FolderEntry */
/** @typedef {{status: string, upload_id: string, reason_code?: string, reason?: string}} Replacement */
/**
 * @typedef {object} FileEntry
 * @property {string} id
 * @property {string} name
 * @property {string} status "uploading", "processing", "available" or "failed"
 * @property {number} [size_bytes]
 * @property {string} [upload_id] set while it is an upload, not yet a file
 * @property {string} [reason_code]
 * @property {string} [reason]
 * @property {string} [origin] "sync" for a linked folder's file
 * @property {number} [version]
 * @property {Replacement | null} [replacement]
 */
/** @typedef {{folders: FolderEntry[], files: FileEntry[], refresh_after_seconds?: number}} Listing */
/**
 * @typedef {object} Link
 * @property {string} dir
 * @property {string} kb_id
 * @property {string} state "waiting", "syncing", "idle", "paused", "error" or "unreadable"
 * @property {string} [paused] why a pass stopped before deleting
 * @property {string} [error]
 * @property {number} [last_pass_at]
 * @property {{counts?: Record<string, number>, delete_first?: string[]}} [last]
 * @property {{path: string, reason: string}[]} [failed]
 * @property {number} [wait_for_room]
 * @property {number} [deleted_since_confirmation]
 * @property {number} [brought_in]
 */
/** @typedef {{user_id: string, name?: string}} Me */
/** @typedef {{result?: any, error?: unknown}} Answer */

export const state = {
  csrf: "",
  /** @type {Me | null} */
  me: null,
  /** @type {KnowledgeBase[]} */
  kbs: [],
  kbsLoaded: false,
  /** @type {KnowledgeBase | null} the one open */
  kb: null,
  /** @type {Crumb[]} the folders from the KB's root to the one shown */
  trail: [],
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  timer: undefined,
  busy: false,
  // listing and answer: the last shown, drawn again in the other language.
  /** @type {Listing | null} */
  listing: null,
  /** @type {Answer | null} */
  answer: null,
  // The notice the page is in when it cannot show the lists ("needSession", "needLogin").
  view: "",
  /** @type {{file: string, shown: boolean} | null} the file an excerpt opened (kb.js) */
  found: null,
  /** @type {Link[] | undefined} */
  links: undefined,
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  linksTimer: undefined,
  /** @type {Record<string, number | undefined> | undefined} each link's last pass, as last seen */
  linkPasses: undefined,
  /** @type {Team[]} the person's teams and open invitations (GET /teams) */
  teams: [],
  teamsLoaded: false,
  /** the teams' last reading's failure, in words ("" when it was read) */
  teamsError: "",
  /** @type {TeamDetail | null} the team open (team.js) */
  team: null,
};

/**
 * The folder shown: the last of the trail, or null at the KB's root.
 * @param {readonly Crumb[]} trail
 * @returns {string | null}
 */
export function folderOf(trail) {
  return trail.length ? trail[trail.length - 1].id : null;
}

export function folderId() {
  return folderOf(state.trail);
}

export function isOwner() {
  return Boolean(state.kb && state.kb.role === "owner");
}

/**
 * The open KB after the lists were read again: its fresh entry, or undefined when it is no longer there.
 * @param {readonly KnowledgeBase[]} kbs
 * @param {KnowledgeBase} open
 * @returns {KnowledgeBase | undefined}
 */
export function reopened(kbs, open) {
  return kbs.find((kb) => kb.id === open.id);
}
