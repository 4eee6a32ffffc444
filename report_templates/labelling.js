"use strict";
(function () {
  // Every user- or model-supplied string goes in with textContent, never as markup.
  var data = JSON.parse(document.getElementById("sample").textContent);
  var chosen = {}; // "case\u0000metric" -> verdict
  var total = 0;
  var root = document.getElementById("cases");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function block(parent, title, text) {
    if (!text) { return; }
    parent.appendChild(el("h3", null, title));
    parent.appendChild(el("div", "text", text));
  }

  function progress() {
    var n = Object.keys(chosen).length;
    document.getElementById("progress").textContent = n + " of " + total + " labelled";
  }

  function metricRow(section, c, m) {
    total += 1;
    var row = el("div", "metric");
    row.setAttribute("data-metric", m.key);
    row.appendChild(el("p", null, m.question + " (" + m.key + ")"));
    m.verdicts.forEach(function (v) {
      var b = el("button", "verdict", v.replace(/_/g, " "));
      b.type = "button";
      b.setAttribute("data-verdict", v);
      b.setAttribute("aria-pressed", "false");
      b.addEventListener("click", function () {
        var key = c.id + "\u0000" + m.key;
        var again = chosen[key] === v;
        row.querySelectorAll("button").forEach(function (o) { o.setAttribute("aria-pressed", "false"); });
        if (again) { delete chosen[key]; } else { chosen[key] = v; b.setAttribute("aria-pressed", "true"); }
        var all = c.metrics.every(function (x) { return (c.id + "\u0000" + x.key) in chosen; });
        section.classList.toggle("done", all);
        progress();
      });
      row.appendChild(b);
    });
    section.appendChild(row);
  }

  data.cases.forEach(function (c, i) {
    var section = el("section", "case");
    section.setAttribute("data-case", c.id);
    section.appendChild(el("h2", null, (i + 1) + ". " + c.id + " (" + c.tier + ")"));
    block(section, "Question", c.question);
    if (c.context.length) {
      var ctx = el("details");
      ctx.open = true;
      ctx.appendChild(el("summary", null, "Context (" + c.context.length + " chunks, as the generator saw them)"));
      c.context.forEach(function (chunk, n) {
        var d = el("div", "chunk");
        d.appendChild(el("b", null, "[" + (n + 1) + "] " + chunk[0]));
        d.appendChild(el("div", "text", chunk[1]));
        ctx.appendChild(d);
      });
      section.appendChild(ctx);
    }
    block(section, c.tier === "dialogue" ? "Dialogue" : "Answer", c.answer);
    if (c.key_facts.length) {
      section.appendChild(el("h3", null, "Key facts"));
      var ol = el("ol");
      c.key_facts.forEach(function (f) { ol.appendChild(el("li", "text", f)); });
      section.appendChild(ol);
    }
    c.metrics.forEach(function (m) { metricRow(section, c, m); });
    root.appendChild(section);
  });
  progress();

  document.getElementById("export").addEventListener("click", function () {
    var status = document.getElementById("status");
    var name = document.getElementById("annotator").value.trim();
    var keys = Object.keys(chosen);
    status.className = "";
    if (!name) { status.className = "problem"; status.textContent = "Write your name first: every label names its annotator."; return; }
    if (!keys.length) { status.className = "problem"; status.textContent = "Nothing labelled yet."; return; }
    var lines = [];
    data.cases.forEach(function (c) {
      c.metrics.forEach(function (m) {
        var v = chosen[c.id + "\u0000" + m.key];
        if (v !== undefined) { lines.push(JSON.stringify({case: c.id, metric: m.key, label: v, annotator: name})); }
      });
    });
    var blob = new Blob([lines.join("\n") + "\n"], {type: "application/x-ndjson"});
    var a = el("a");
    a.href = URL.createObjectURL(blob);
    a.download = "human-labels.jsonl";
    document.body.appendChild(a);
    a.click();
    a.remove();
    status.textContent = "Exported " + lines.length + " label(s) as human-labels.jsonl.";
  });
})();
