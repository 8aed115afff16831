// The Playground: a conversation kept in this page, answers streamed from the console's gateway endpoint.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const chat = $("chat");
  if (!chat) return;
  let messages = [];
  let answers = 0;
  // The conversation is kept in this browser tab only (sessionStorage), never on the server.
  const STORE = "astralyx.playground";
  const remember = () => sessionStorage.setItem(STORE, JSON.stringify({
    title: $("title").value, deployment: $("deployment").value, messages }));

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body || {}),
      credentials: "same-origin",
    });
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) throw (data && data.error) || { code: "HTTP_" + response.status, message: response.statusText };
    return data;
  }

  function errorBox(error) {
    return el("div", { class: "flash error", role: "alert" }, el("code", { text: error.code || "ERROR" }), " " + (error.message || ""));
  }

  // The answer's text with each [n] linked to its passage below it.
  function withCitations(text, prefix, refs) {
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of text.matchAll(/\[(\d+)\]/g)) {
      const ref = Number(m[1]);
      if (!refs.has(ref)) continue;
      frag.append(text.slice(last, m.index));
      frag.append(el("a", { href: `#${prefix}-p${ref}`, class: "cite", "aria-label": `source ${ref}`, text: `[${ref}]` }));
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    return frag;
  }

  function addMessage(role, text) {
    const body = el("span", { class: "body", text });
    const node = el("div", { class: `msg ${role}` }, el("span", { class: "who", text: role === "user" ? "You" : $("deployment").value }), body);
    chat.append(node);
    return { node, body };
  }

  function showSources(answer, prefix, passages) {
    if (!passages.length) return;
    const list = el("ol", { class: "sources", role: "list", "aria-label": "Sources" });
    for (const p of passages) {
      const item = el("li", { id: `${prefix}-p${p.ref}`, value: String(p.ref) },
        el("strong", { text: `[${p.ref}] ${p.title || p.document}` }), " ",
        el("span", { class: "muted", text: `${p.document} · ${p.where || ""}` }));
      const text = el("details", {}, el("summary", { text: "passage" }), el("div", { text: p.text }));
      item.append(text);
      list.append(item);
    }
    answer.node.append(list);
  }

  function savedCard(save) {
    const card = el("div", { class: "card saved", role: "status" });
    const render = () => {
      card.replaceChildren(
        el("h3", { text: `Saved to ${save.knowledge_base}` }),
        el("a", { href: save.page, text: save.title }), " ",
      );
      const undo = el("button", { type: "button", text: "Undo" });
      undo.addEventListener("click", async () => {
        try {
          await post(`/playground/api/saves/${save.knowledge_base}/${save.id}/undo`);
        } catch (error) {
          if (error.code !== "NOTE_CHANGED") { card.append(errorBox(error)); return; }
          if (!window.confirm(`${error.message}\n\nUndo anyway?`)) return;
          try { await post(`/playground/api/saves/${save.knowledge_base}/${save.id}/undo?force=true`); }
          catch (e) { card.append(errorBox(e)); return; }
        }
        card.replaceChildren(el("h3", { text: `Undone: ${save.title} is no longer in ${save.knowledge_base}` }));
      });
      card.append(undo);
    };
    render();
    return card;
  }

  function draftCard(draft) {
    const base = draft.knowledge_base;
    // The person may correct the model's wording before saving it.
    const titleId = `draft-${draft.id}-title`, textId = `draft-${draft.id}-text`;
    const title = el("input", { type: "text", id: titleId });
    title.value = draft.title;
    const text = el("textarea", { id: textId, rows: "3" });
    text.value = draft.text;
    const card = el("div", { class: "card", role: "group", "aria-label": `Draft: ${draft.title}` },
      el("h3", { text: `Draft for ${base}: ${draft.title}` }),
      el("label", { for: titleId, text: "Title" }), title, el("label", { for: textId, text: "Note" }), text);
    const save = el("button", { type: "button", class: "primary", text: "Save" });
    const discard = el("button", { type: "button", text: "Discard" });
    save.addEventListener("click", async () => {
      try {
        const saved = await post(`/playground/api/drafts/${base}/${draft.id}/save`, { title: title.value, text: text.value });
        card.replaceWith(savedCard({ ...saved, knowledge_base: base }));
      } catch (error) { card.append(errorBox(error)); }
    });
    discard.addEventListener("click", async () => {
      try {
        await post(`/playground/api/drafts/${base}/${draft.id}/discard`);
        card.replaceChildren(el("p", { class: "muted", text: `Discarded: ${draft.title}` }));
      } catch (error) { card.append(errorBox(error)); }
    });
    card.append(el("div", { class: "row" }, save, discard));
    if (draft.expires_at) {
      card.append(el("p", { class: "muted", text: `Undecided, it expires on ${draft.expires_at.slice(0, 10)}; it also waits on the base's page.` }));
    }
    return card;
  }

  async function send(text) {
    messages.push({ role: "user", content: text });
    addMessage("user", text);
    const answer = addMessage("assistant", "");
    const prefix = `a${++answers}`;
    chat.setAttribute("aria-busy", "true");  // read out once the answer is whole, not piece by piece
    $("send").disabled = true;
    $("busy").textContent = "answering…";
    let content = "";
    try {
      const response = await fetch("/playground/api/chat", {
        method: "POST", headers: { "content-type": "application/json" }, credentials: "same-origin",
        body: JSON.stringify({ deployment: $("deployment").value, conversation_title: $("title").value, messages }),
      });
      if (!response.ok) {
        let error = { code: "HTTP_" + response.status, message: response.statusText };
        try { error = (await response.json()).error || error; } catch (e) { /* keep the status */ }
        throw error;
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      let done = null;
      for (;;) {
        const { value, done: finished } = await reader.read();
        if (finished) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const line = buffer.slice(0, cut).replace(/^data: /, "");
          buffer = buffer.slice(cut + 2);
          const event = JSON.parse(line);
          if (event.error) throw event.error;
          if (event.delta) { content += event.delta; answer.body.textContent = content; }
          if (event.done) done = event;
        }
      }
      messages.push({ role: "assistant", content });
      if (done) {
        const passages = done.passages || [];
        answer.body.replaceChildren(withCitations(content, prefix, new Set(passages.map((p) => p.ref))));
        showSources(answer, prefix, passages);
        for (const draft of done.astralyx.drafts || []) chat.append(draftCard(draft));
        for (const save of done.astralyx.saves || []) chat.append(savedCard(save));
      }
    } catch (error) {
      if (content) messages.push({ role: "assistant", content });
      answer.node.append(errorBox(error));
    } finally {
      remember();
      chat.setAttribute("aria-busy", "false");
      $("send").disabled = false;
      $("busy").textContent = "";
      $("remember").hidden = messages.length === 0;
    }
  }

  $("ask").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("message").value.trim();
    if (!text) return;
    $("message").value = "";
    send(text);
  });
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("ask").requestSubmit(); }
  });
  try {
    const kept = JSON.parse(sessionStorage.getItem(STORE) || "null");
    if (kept && Array.isArray(kept.messages) && kept.messages.length) {
      messages = kept.messages;
      $("title").value = kept.title || $("title").value;
      if ([...$("deployment").options].some((o) => o.value === kept.deployment)) $("deployment").value = kept.deployment;
      for (const m of messages) addMessage(m.role, m.content);
      $("remember").hidden = false;
    }
  } catch (e) { sessionStorage.removeItem(STORE); }
  $("title").addEventListener("change", remember);

  $("new-chat").addEventListener("click", () => {
    sessionStorage.removeItem(STORE);
    messages = [];
    chat.replaceChildren();
    $("remember").hidden = true;
    const form = $("proposals-form");
    if (form) form.hidden = true;
  });

  // Remember this conversation: propose, untick, keep.
  const find = $("find-facts");
  if (!find) return;
  let proposals = [];
  const button = $("remember-button");
  const count = () => {
    const n = document.querySelectorAll("#proposals input[type=checkbox]:checked").length;
    button.textContent = `Remember ${n} fact${n === 1 ? "" : "s"}`;
    button.disabled = n === 0;
  };
  find.addEventListener("click", async () => {
    const status = $("remember-status");
    status.replaceChildren("reading the conversation for facts (a small model on a CPU takes a minute or two)…");
    find.disabled = true;
    $("proposals-form").hidden = true;
    try {
      const result = await post(`/playground/api/memory/${$("memory").value}/extract`,
        { source: `chat: ${$("title").value || "playground"}`, messages });
      proposals = result.proposals;
      const list = $("proposals");
      list.replaceChildren();
      proposals.forEach((p, i) => {
        const id = `proposal-${i}`;
        const box = el("input", { type: "checkbox", id });
        box.checked = !p.known;
        const label = el("label", { for: id, text: `${p.subject} — ${p.attribute}: ${p.fact}` });
        const meta = el("span", { class: "muted", text: ` (${(p.said_at || "").slice(0, 10)}, ${p.source})` });
        const item = el("li", {}, box, " ", el("span", { class: "badge", text: p.known ? "known" : p.status }), " ", label, meta);
        if (p.replaces) item.append(el("span", { class: "replaces", text: `replaces: ${p.replaces.fact}` }));
        if (p.current) item.append(el("span", { class: "replaces", text: `older than what holds now: ${p.current.fact}` }));
        if (p.known) item.append(el("span", { class: "replaces", text: "already known" }));
        list.append(item);
      });
      let text = proposals.length ? `${result.extractor} proposes ${proposals.length} fact${proposals.length === 1 ? "" : "s"}.`
        : "No facts proposed: nothing durable was said. You can add a fact by hand in Metis ▸ Memory.";
      if (result.left_out_secrets) text += ` ${result.left_out_secrets} left out: they looked like secrets.`;
      status.replaceChildren(text);
      $("proposals-form").hidden = proposals.length === 0;
      count();
    } catch (error) {
      status.replaceChildren(errorBox(error));
    } finally {
      find.disabled = false;
    }
  });
  $("proposals").addEventListener("change", count);
  $("proposals-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = proposals.filter((p, i) => $(`proposal-${i}`).checked);
    const memory = $("memory").value;
    const status = $("remember-status");
    try {
      const result = await post(`/playground/api/memory/${memory}/keep`, { facts: chosen });
      $("proposals-form").hidden = true;
      const replaced = result.replaced ? `; ${result.replaced} replaced an older fact` : "";
      status.replaceChildren(`Kept ${result.kept} in `, el("a", { href: `/metis/memory/${memory}`, text: memory }), replaced + ".");
    } catch (error) {
      status.replaceChildren(errorBox(error));
    }
  });
})();
