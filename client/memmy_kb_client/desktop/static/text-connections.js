// @ts-check
// The words of the apps connected through the remote MCP endpoint (in Chinese and English): the "Connected
// apps" section, its disconnect question and its refusal. i18n.js adds them to text.js's.

/** @type {Record<import("./text.js").Lang, import("./text.js").Words>} */
export const CONNECTION_TEXT = {
  zh: {
    connections: "已连接的应用",
    connectionsWhat: "已连接的应用是你授权过的远程智能体（例如 Claude 或 ChatGPT 的连接器、云端智能体）：它们把令牌保存在自己的服务器上，通过 Memmy 的远程 MCP 端点检索你的知识库。",
    noConnections: "还没有已连接的应用。一个应用在你登录并同意之后，才会连接到你的知识库，并出现在这里。这台电脑上的智能体（钩子或 memmy-kb mcp）经由桌面服务检索，不会出现在这里。",
    connectionsUnreadable: "无法读取已连接的应用：{error}",
    connSince: "连接于 {when}", connLastUsed: "最近使用：{when}", connNeverUsed: "尚未使用",
    connMay: "可以：{what}", scopeSearch: "检索", scopeReadOnly: "只读",
    connActive: "已连接", connRevoked: "已断开（{when}）",
    disconnect: "断开连接",
    confirmDisconnect: "断开「{name}」？它的令牌将立即失效，无法再检索你的知识库；除非你再次登录并同意，否则它不能重新连接。",
    disconnected: "已断开「{name}」。",
    connActivity: "最近的连接活动", noConnActivity: "还没有连接活动。",
    connAdded: "{name} 已连接", connRemoved: "{name} 已断开",
    unnamedClient: "未命名的应用",
    err_connection_not_found: "找不到这个连接：它可能已被删除。",
  },
  en: {
    connections: "Connected apps",
    connectionsWhat: "A connected app is a remote agent you allowed in (a Claude or ChatGPT connector, a cloud agent): it keeps its token on its own servers and searches your knowledge bases through Memmy's remote MCP endpoint.",
    noConnections: "No app is connected yet. An app connects to your knowledge bases, and appears here, once you sign in to it and allow it. Agents on this computer (the hooks, memmy-kb mcp) search through the desktop service instead and are not listed here.",
    connectionsUnreadable: "The connected apps could not be read: {error}",
    connSince: "Connected {when}", connLastUsed: "Last used {when}", connNeverUsed: "Not used yet",
    connMay: "May: {what}", scopeSearch: "search", scopeReadOnly: "read only",
    connActive: "Connected", connRevoked: "Disconnected {when}",
    disconnect: "Disconnect",
    confirmDisconnect: "Disconnect “{name}”? Its tokens stop working at once and it can no longer search your knowledge bases; it connects again only if you sign in to it and allow it again.",
    disconnected: "Disconnected “{name}”.",
    connActivity: "Recent connection activity", noConnActivity: "No connection activity yet.",
    connAdded: "{name} connected", connRemoved: "{name} disconnected",
    unnamedClient: "Unnamed app",
    err_connection_not_found: "Connection not found: it may have been removed.",
  },
};
