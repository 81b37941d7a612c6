"""The authorization server's pages: the consent page and the error page, plain HTML without script, in
Chinese or English (Chinese unless the browser's first language is English, as the desktop page
chooses).

Everything shown that a client chose (its name, its redirect URI's host) is escaped. Every page is sent
``no-store``, may not be framed, and its Content-Security-Policy lets its form post only here or to the
client's redirect origin (a form's answer redirects there, and browsers hold that to ``form-action``).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from memmy_kb.api.mcp_auth.requests import Answer

CONSENT_PATH = "/oauth/consent"
REQUEST_FIELD = "request"
CONSENT_FIELD = "consent"
DECISION_FIELD = "decision"  # "allow" or "deny"

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;line-height:1.5}"
    "button{margin:1.2rem .6rem 0 0;padding:.5rem 1.2rem}.note{color:#555;font-size:.9rem}"
)


@dataclass(frozen=True)
class Words:
    lang: str
    consent_title: str
    asks: str  # {who} asks to connect
    unnamed: str  # {host}
    may: str
    signed_in: str  # {user}
    allow: str
    deny: str
    refused_title: str


WORDS = {
    "zh": Words(
        lang="zh-CN",
        consent_title="允许访问 Memmy？",
        asks="{who} 请求连接到你的 Memmy 账户。",
        unnamed="位于 {host} 的一个应用",
        may="如果你允许，它可以搜索并读取你召回范围内知识库的摘录；它不能修改、共享或删除任何内容。",
        signed_in="已登录：{user}",
        allow="允许",
        deny="拒绝",
        refused_title="无法完成授权",
    ),
    "en": Words(
        lang="en",
        consent_title="Allow access to Memmy?",
        asks="{who} asks to connect to your Memmy account.",
        unnamed="An application at {host}",
        may=(
            "If you allow it, it may search and read the excerpts of the knowledge bases in your recall "
            "scope; it cannot change, share or delete anything."
        ),
        signed_in="Signed in as {user}.",
        allow="Allow",
        deny="Deny",
        refused_title="The authorization cannot go on",
    ),
}


def language(accept_language: str | None) -> str:
    """``en`` when the browser's first language is English, else ``zh``."""
    first = (accept_language or "").split(",", 1)[0].split(";", 1)[0].strip().lower()
    return "en" if first.startswith("en") else "zh"


def content_security_policy(redirect_origin: str | None = None) -> str:
    form_action = "'self'" + (f" {redirect_origin}" if redirect_origin else "")
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; form-action {form_action}; "
        "frame-ancestors 'none'; base-uri 'none'"
    )


def _html(status: int, words: Words, title: str, body: str, redirect_origin: str | None = None) -> Answer:
    page = (
        f'<!doctype html><html lang="{words.lang}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · Memmy</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )
    headers = {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": content_security_policy(redirect_origin),
        "x-frame-options": "DENY",
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
    }
    return Answer(status, headers, page)


def consent_page(
    lang: str,
    *,
    request_id: str,
    consent: str,
    user: str,
    client_name: str | None,
    client_id: str,
    redirect_host: str,
    redirect_origin: str,
) -> Answer:
    """The consent form: who asks (its name, else its client id, and its redirect URI's host), what it may
    do, and Allow / Deny posting ``request``, ``consent`` and ``decision`` to ``/oauth/consent``."""
    words = WORDS[lang]
    if client_name:
        who = f"<strong>{escape(client_name)}</strong> ({escape(redirect_host)})"
    elif client_id:
        who = f"<strong>{escape(client_id)}</strong> ({escape(redirect_host)})"
    else:
        who = escape(words.unnamed.format(host=redirect_host))
    body = (
        f'<p class="note">{escape(words.signed_in.format(user=user))}</p>'
        f"<p>{escape(words.asks).replace('{who}', who)}</p>"
        f"<p>{escape(words.may)}</p>"
        f'<form method="post" action="{CONSENT_PATH}">'
        f'<input type="hidden" name="{REQUEST_FIELD}" value="{escape(request_id)}">'
        f'<input type="hidden" name="{CONSENT_FIELD}" value="{escape(consent)}">'
        f'<button type="submit" name="{DECISION_FIELD}" value="allow">{escape(words.allow)}</button>'
        f'<button type="submit" name="{DECISION_FIELD}" value="deny">{escape(words.deny)}</button></form>'
    )
    return _html(200, words, words.consent_title, body, redirect_origin)


# Why an authorization stops at a page of ours, by key: (Chinese, English).
MESSAGES = {
    "bad_request": (
        "这个授权请求无法使用：应用的重定向地址无法确认。",
        "This authorization request cannot be used: the application's redirect address cannot be confirmed.",
    ),
    "expired": (
        "这次登录已过期或已经完成。请回到应用重新连接。",
        "This sign-in has expired or is already finished. Go back to the application and connect again.",
    ),
    "other_browser": (
        "这次登录是在另一个浏览器中开始的。请在同一个浏览器中完成，或回到应用重新连接。",
        "This sign-in was started in another browser. Finish it there, or go back to the application and "
        "connect again.",
    ),
    "login_failed": ("登录没有成功。", "The sign-in did not succeed."),
    "unavailable": ("登录服务暂时不可用，请稍后再试。", "The sign-in service is unavailable; try again shortly."),
}


def error_page(lang: str, key: str, detail: str = "", status: int = 400) -> Answer:
    """A page that says why the authorization stops, with ``detail`` (a sentence of the protocol's, in
    English) when there is one."""
    words = WORDS[lang]
    zh, en = MESSAGES[key]
    body = f"<p>{escape(en if lang == 'en' else zh)}</p>"
    if detail:
        body += f'<p class="note">{escape(detail)}</p>'
    return _html(status, words, words.refused_title, body)
