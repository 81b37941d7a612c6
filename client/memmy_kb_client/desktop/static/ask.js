// "Try a question": a recall as the agents' hook gets it, each excerpt with where it came from (see app.js).
"use strict";

// ---------------------------------------------------------------------------------- try a question

// Where an excerpt came from: its knowledge base (and whose share), or the group of KBs searched together
// (each with whose share it is, for one shared with you); the nodes of one line, others' text in <bdi>.
function sourceOf(item) {
  const owner = (o) => (o ? [` · ${t("sharedBy")} `, theirs(o.name || ""), ...(o.contact ? [" (", theirs(o.contact), ")"] : [])] : []);
  if (item.knowledge_base) return [`${t("fromKb")} `, theirs(item.knowledge_base.name), ...owner(item.owner)];
  if (item.knowledge_bases && item.knowledge_bases.length) {
    const parts = [`${t("fromOneOf")} `];
    item.knowledge_bases.forEach((kb, index) => {
      if (index) parts.push(LANG === "zh" ? "；" : "; ");
      parts.push(theirs(kb.name), ...owner(kb.owner));
    });
    return parts;
  }
  return [];
}

async function ask(query) {
  const answer = $("answer");
  answer.replaceChildren(el("p", { class: "muted", text: "…" }));
  try {
    state.answer = { result: await api("POST", "/recall", { query }) };
  } catch (error) {
    state.answer = { error };
  }
  renderAnswer();
}

// Why nothing came back: no KB in recall at all (and how to get one), or nothing in them matched.
function nothingFound(result) {
  if (result.scope_size) return t("nothing");
  return t(state.kbs.length ? "noneInRecall" : "noKbsToAsk");
}

function renderAnswer() {
  const { result, error } = state.answer || {};
  if (error) {
    $("answer").replaceChildren(el("p", { class: "error", role: "alert", text: human(error) }));
    return;
  }
  if (!result) return;
  const parts = [];
  if (result.scope_size) parts.push(el("p", { class: "muted", text: tn("scope", result.scope_size) }));
  if (!result.items.length) parts.push(el("p", { class: "nothing", text: nothingFound(result) }));
  else {
    parts.push(el("h3", { text: t("excerpts") }));
    for (const item of result.items) {
      parts.push(el("article", { class: "excerpt" }, el("h3", {}, "《", theirs(item.title), "》"),
        el("p", { class: "source muted" }, ...sourceOf(item)), el("p", { class: "text", text: item.content })));
    }
  }
  if (result.context) {
    parts.push(el("details", {}, el("summary", { text: t("block") }), el("pre", { text: result.context })));
  }
  $("answer").replaceChildren(...parts);
}
