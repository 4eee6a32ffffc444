"use strict";
(function () {
  // Every draft, passage and model text goes in with textContent, never as markup.
  var data = JSON.parse(document.getElementById("review-data").textContent);
  var drafts = data.mode === "drafts";
  var storageKey = "rag-eval-review:" + data.storage;
  var state = {}; // id -> {decision, reason, requirement, edit: {question, points, tags, action, evidence}}
  var sections = [];
  var current = 0;
  var root = document.getElementById("items");

  try { state = JSON.parse(window.localStorage.getItem(storageKey) || "{}") || {}; } catch (e) { state = {}; }

  function save() {
    try { window.localStorage.setItem(storageKey, JSON.stringify(state)); } catch (e) { /* private mode: progress lives in the page only */ }
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function idOf(item) { return drafts ? item.id : item.key; }

  function progress() {
    var n = data.items.filter(function (it) { return state[idOf(it)] && state[idOf(it)].decision; }).length;
    document.getElementById("progress").textContent = n + " of " + data.items.length + " reviewed";
  }

  function renderPassage(box, text, marks) {
    while (box.firstChild) { box.removeChild(box.firstChild); }
    var at = 0;
    marks.slice().sort(function (a, b) { return a[0] - b[0]; }).forEach(function (m) {
      if (m[0] < at) { return; }
      box.appendChild(document.createTextNode(text.slice(at, m[0])));
      box.appendChild(el("mark", null, text.slice(m[0], m[1])));
      at = m[1];
    });
    box.appendChild(document.createTextNode(text.slice(at)));
  }

  function squeeze(s) { return s.replace(/\s+/g, ""); }

  function locate(text, quote) {
    // Offsets of quote in text, whitespace-insensitive (as the quote check does).
    var keep = [], flat = "";
    for (var i = 0; i < text.length; i++) { if (!/\s/.test(text[i])) { keep.push(i); flat += text[i]; } }
    var q = squeeze(quote);
    var at = q ? flat.indexOf(q) : -1;
    return at < 0 ? null : [keep[at], keep[at + q.length - 1] + 1];
  }

  function setDecision(section, id, decision) {
    var s = state[id] || (state[id] = {});
    s.decision = s.decision === decision && decision !== "edit" ? undefined : decision;
    section.setAttribute("data-decision", s.decision || "");
    section.querySelectorAll(".actions button[data-decision]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-decision") === s.decision ? "true" : "false");
    });
    var form = section.querySelector(".edit");
    if (form) { form.hidden = s.decision !== "edit"; }
    save();
    progress();
  }

  function button(section, id, decision, label) {
    var b = el("button", null, label);
    b.type = "button";
    b.setAttribute("data-decision", decision);
    b.addEventListener("click", function () { setDecision(section, id, decision); });
    return b;
  }

  function reasonInput(section, id) {
    var input = el("input");
    input.type = "text";
    input.className = "reason";
    input.placeholder = "reason (needed to reject)";
    input.value = (state[id] && state[id].reason) || "";
    input.addEventListener("input", function () { (state[id] || (state[id] = {})).reason = input.value; save(); });
    return input;
  }

  function field(form, label, value, multi, name) {
    var l = el("label", null, label);
    var input = multi ? el("textarea") : el("input");
    if (!multi) { input.type = "text"; }
    input.name = name;
    input.value = value;
    l.appendChild(input);
    form.appendChild(l);
    return input;
  }

  function editOf(d) {
    var s = state[d.id] || (state[d.id] = {});
    if (!s.edit) {
      s.edit = {
        question: d.question,
        points: d.answer_points.join("\n"),
        tags: Object.keys(d.tags).map(function (k) { return k + "=" + d.tags[k]; }).join(", "),
        action: d.expected_action,
        evidence: d.evidence.map(function (e) { return {doc_id: e.doc_id, quote: e.quote}; })
      };
    }
    return s.edit;
  }

  function marksFor(d, evidence, p) {
    var out = [];
    evidence.forEach(function (e) {
      if (e.doc_id !== p.doc_id) { return; }
      var m = locate(p.text, e.quote);
      if (m) { out.push(m); }
    });
    return out;
  }

  function draftSection(d, i) {
    var section = el("section", "item");
    section.setAttribute("data-id", d.id);
    section.appendChild(el("h2", null, (i + 1) + ". " + d.recipe + " · " + d.id));
    if (d.review_note) { section.appendChild(el("p", "note", d.review_note)); }
    section.appendChild(el("h3", null, "Question"));
    section.appendChild(el("div", "text question", d.question));
    if (d.answer_points.length) {
      section.appendChild(el("h3", null, "Answer points"));
      var ol = el("ol");
      d.answer_points.forEach(function (p) { ol.appendChild(el("li", "text", p)); });
      section.appendChild(ol);
    }
    section.appendChild(el("p", "muted", "expected action: " + d.expected_action + " · tags: " +
      Object.keys(d.tags).map(function (k) { return k + "=" + d.tags[k]; }).join(", ")));
    var boxes = [];
    d.passages.forEach(function (p, n) {
      section.appendChild(el("h3", null, "Passage · " + p.doc_id + " [" + p.start + ", " + p.end + ")"));
      var box = el("div", "passage");
      box.setAttribute("data-passage", String(n));
      renderPassage(box, p.text, d.marks[n] || []);
      section.appendChild(box);
      boxes.push(box);
    });
    var actions = el("p", "actions");
    actions.appendChild(button(section, d.id, "accept", "Accept (a)"));
    actions.appendChild(button(section, d.id, "edit", "Edit (e)"));
    actions.appendChild(button(section, d.id, "reject", "Reject (r)"));
    actions.appendChild(reasonInput(section, d.id));
    section.appendChild(actions);
    var form = el("div", "edit");
    form.hidden = true;
    var e = editOf(d);
    field(form, "Question", e.question, true, "question").addEventListener("input", function (ev) { e.question = ev.target.value; save(); });
    field(form, "Answer points (one per line)", e.points, true, "points").addEventListener("input", function (ev) { e.points = ev.target.value; save(); });
    field(form, "Tags (key=value, comma separated)", e.tags, false, "tags").addEventListener("input", function (ev) { e.tags = ev.target.value; save(); });
    var action = field(form, "Expected action (answer, refuse, clarify)", e.action, false, "action");
    action.addEventListener("input", function (ev) { e.action = ev.target.value.trim(); save(); });
    var spanButton = el("button", "use-selection", "Use selected passage text as the gold span (s)");
    spanButton.type = "button";
    spanButton.addEventListener("click", function () { useSelection(d, boxes); });
    form.appendChild(spanButton);
    form.appendChild(el("p", "muted gold-now", "gold: " + e.evidence.map(function (x) { return x.quote; }).join(" | ")));
    section.appendChild(form);
    section.refresh = function () {
      d.passages.forEach(function (p, n) { renderPassage(boxes[n], p.text, marksFor(d, e.evidence, p)); });
      form.querySelector(".gold-now").textContent = "gold: " + e.evidence.map(function (x) { return x.quote; }).join(" | ");
    };
    return section;
  }

  function useSelection(d, boxes) {
    var sel = window.getSelection();
    var status = document.getElementById("status");
    if (!sel || sel.rangeCount === 0 || !sel.toString().trim()) { status.textContent = "Select text in the passage first."; return; }
    var range = sel.getRangeAt(0);
    var n = boxes.findIndex(function (b) { return b.contains(range.startContainer) && b.contains(range.endContainer); });
    if (n < 0) { status.textContent = "Select the gold span inside one passage."; return; }
    var p = d.passages[n], e = editOf(d), quote = sel.toString().trim();
    var k = e.evidence.findIndex(function (x) { return x.doc_id === p.doc_id; });
    if (k < 0) { e.evidence.push({doc_id: p.doc_id, quote: quote}); } else { e.evidence[k] = {doc_id: p.doc_id, quote: quote}; }
    save();
    sections[data.items.indexOf(d)].refresh();
    status.textContent = "Gold span of " + d.id + " set (" + quote.length + " characters).";
  }

  function evidenceSection(c, i) {
    var section = el("section", "item");
    section.setAttribute("data-id", c.key);
    section.appendChild(el("h2", null, (i + 1) + ". " + c.case + " · " + c.doc_id + (c.chunk_id ? " · " + c.chunk_id : "")));
    section.appendChild(el("h3", null, "Question"));
    section.appendChild(el("div", "text question", c.question));
    section.appendChild(el("h3", null, "Gold now"));
    var ol = el("ol");
    c.gold.forEach(function (g) { ol.appendChild(el("li", "text", g.join("  |  "))); });
    section.appendChild(ol);
    section.appendChild(el("h3", null, "Candidate (not gold): " + c.why.join("; ")));
    var box = el("div", "passage", c.quote);
    section.appendChild(box);
    var actions = el("p", "actions");
    actions.appendChild(button(section, c.key, "equivalent", "Equivalent (y)"));
    actions.appendChild(button(section, c.key, "partial", "Partial (p)"));
    actions.appendChild(button(section, c.key, "irrelevant", "Irrelevant (n)"));
    if (c.gold.length > 1) {
      var select = el("select", "requirement");
      c.gold.forEach(function (g, n) { var o = el("option", null, "requirement " + (n + 1)); o.value = String(n); select.appendChild(o); });
      select.value = String((state[c.key] && state[c.key].requirement) || 0);
      select.addEventListener("change", function () { (state[c.key] || (state[c.key] = {})).requirement = Number(select.value); save(); });
      actions.appendChild(select);
    }
    actions.appendChild(reasonInput(section, c.key));
    section.appendChild(actions);
    section.refresh = function () {};
    return section;
  }

  data.items.forEach(function (it, i) {
    var section = drafts ? draftSection(it, i) : evidenceSection(it, i);
    section.addEventListener("click", function () { focus(i, false); });
    sections.push(section);
    root.appendChild(section);
    var s = state[idOf(it)];
    if (s && s.decision) { var d = s.decision; s.decision = undefined; setDecision(section, idOf(it), d); section.refresh(); }
  });
  progress();

  function focus(i, scroll) {
    if (!sections.length) { return; }
    sections[current].classList.remove("current");
    current = Math.max(0, Math.min(sections.length - 1, i));
    sections[current].classList.add("current");
    if (scroll) { sections[current].scrollIntoView({block: "start"}); }
  }
  focus(0, false);

  var keys = drafts ? {a: "accept", e: "edit", r: "reject"} : {y: "equivalent", p: "partial", n: "irrelevant"};
  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    if (ev.ctrlKey || ev.metaKey || ev.altKey || (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT"))) { return; }
    var item = data.items[current];
    if (ev.key === "j") { focus(current + 1, true); } else if (ev.key === "k") { focus(current - 1, true); }
    else if (keys[ev.key]) { setDecision(sections[current], idOf(item), keys[ev.key]); }
    else if (ev.key === "s" && drafts) { useSelection(item, Array.prototype.slice.call(sections[current].querySelectorAll(".passage"))); }
    else { return; }
    ev.preventDefault();
  });

  function parseTags(text) {
    var out = {};
    text.split(",").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at > 0) { out[pair.slice(0, at).trim()] = pair.slice(at + 1).trim(); }
    });
    return out;
  }

  function line(it, s, reviewer, time) {
    if (!drafts) {
      var ev = {kind: "evidence", key: it.key, "case": it.case, decision: s.decision, reason: s.reason || "", reviewer: reviewer,
        time: time, doc_id: it.doc_id, quote: it.quote, chunk_id: it.chunk_id, requirement: s.requirement || 0};
      return ev;
    }
    var out = {kind: "draft", draft: it.id, decision: s.decision, reason: s.reason || "", reviewer: reviewer, time: time,
      passages: it.passages, provenance: it.provenance};
    if (s.decision === "accept") {
      out.item = {question: it.question, answer_points: it.answer_points, tags: it.tags, expected_action: it.expected_action,
        evidence: it.evidence, history: it.history};
    } else if (s.decision === "edit") {
      var e = editOf(it);
      out.item = {question: e.question, answer_points: e.points.split("\n").map(function (x) { return x.trim(); }).filter(Boolean),
        tags: parseTags(e.tags), expected_action: e.action, evidence: e.evidence, history: it.history};
    }
    return out;
  }

  document.getElementById("export").addEventListener("click", function () {
    var status = document.getElementById("status");
    var reviewer = document.getElementById("reviewer").value.trim();
    status.className = "";
    if (!reviewer) { status.className = "problem"; status.textContent = "Write your name first: every decision names its reviewer."; return; }
    var time = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    var lines = [], missing = [];
    data.items.forEach(function (it) {
      var s = state[idOf(it)];
      if (!s || !s.decision) { return; }
      if (s.decision === "reject" && !(s.reason || "").trim()) { missing.push(idOf(it)); return; }
      lines.push(JSON.stringify(line(it, s, reviewer, time)));
    });
    if (missing.length) { status.className = "problem"; status.textContent = "Give a reason to reject: " + missing.join(", "); return; }
    if (!lines.length) { status.className = "problem"; status.textContent = "Nothing reviewed yet."; return; }
    var blob = new Blob([lines.join("\n") + "\n"], {type: "application/x-ndjson"});
    var a = el("a");
    a.href = URL.createObjectURL(blob);
    a.download = data.export;
    document.body.appendChild(a);
    a.click();
    a.remove();
    status.textContent = "Exported " + lines.length + " decision(s) as " + data.export + ".";
  });
})();
