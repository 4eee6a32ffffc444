/* rag-eval report: case-list filters and the expanded case view.
 * Data comes from two JSON blocks (case-index: what filters need, parsed at load;
 * case-data: per-item details, parsed on the first expansion). Every piece of data is
 * put into the page with createElement/textContent; innerHTML is never used. */
(function () {
  "use strict";
  var INDEX = JSON.parse(document.getElementById("case-index").textContent);
  /* case-data is a JSON array with one element per line: [string table, item 0, item 1, ...];
   * only the lines needed are parsed. */
  var LINES = null, HEAD = null, ITEMS = {};
  function line(k) {
    if (LINES === null) LINES = document.getElementById("case-data").textContent.split("\n");
    var text = LINES[k + 1];
    if (text.charAt(text.length - 1) === ",") text = text.slice(0, -1);
    return JSON.parse(text);
  }
  function head() { return HEAD || (HEAD = line(0)); }
  function item(i) { return ITEMS[i] || (ITEMS[i] = line(i + 1)); }
  function S(i) { return i === null || i === undefined ? "" : head().strings[i]; }
  function $(id) { return document.getElementById(id); }
  /* the tiers' own views of an expanded case, registered by the page before this script */
  var VIEWS = typeof ragEvalTierViews === "object" && ragEvalTierViews ? ragEvalTierViews : {};

  var table = $("case-table");
  var rows = table ? Array.prototype.slice.call(table.tBodies[0].rows) : [];
  var hay = INDEX.rows.map(function (r) { return (r.id + "\n" + r.q).toLowerCase(); });
  var detailRows = {};
  var PAGE = INDEX.page || 200;
  var state = { tier: "", outcome: "", stage: "", tag: "", q: "", newly: false, set: null, setLabel: "", limit: PAGE };

  /* ---------- filters ---------- */
  function isFailing(o) { return o === "fail" || o === "error"; }
  function matches(i) {
    var r = INDEX.rows[i];
    if (state.set && !state.set[i]) return false;
    if (state.newly && !r.newly) return false;
    if (state.tag && r.tags.indexOf(state.tag) < 0) return false;
    if (state.q && hay[i].indexOf(state.q) < 0) return false;
    var t = state.tier ? INDEX.tiers.indexOf(state.tier) : -1;
    if (t >= 0 && (r.o[t] === null || r.o[t] === undefined)) return false;
    if (state.outcome) {
      var want = state.outcome;
      var test = function (o) { return want === "failing" ? isFailing(o) : o === want; };
      if (t >= 0) {
        if (!test(r.o[t])) return false;
      } else if (want === "pass") {
        if (r.o.some(isFailing) || !r.o.some(test)) return false;
      } else if (!r.o.some(test)) {
        return false;
      }
    }
    if (state.stage) {
      var s = t >= 0 ? r.s[t] : r.stage;
      if (state.stage === "none" ? s !== null : s !== state.stage) return false;
    }
    return true;
  }
  /* Only the first state.limit matching rows are laid out (see PAGE_SIZE in html.py). */
  function apply(keepLimit) {
    if (!keepLimit) state.limit = PAGE;
    var matching = 0, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = matches(i);
      if (ok) matching++;
      var visible = ok && matching <= state.limit;
      if (visible) shown++;
      if (rows[i].hidden === visible) rows[i].hidden = !visible;
      var d = detailRows[i];
      if (d) d.hidden = !visible || rows[i].querySelector("button.open").getAttribute("aria-expanded") !== "true";
    }
    var text = "showing " + shown + " of " + rows.length + " items";
    if (matching < rows.length) text = "showing " + shown + " of " + matching + " matching items (" + rows.length + " in all)";
    $("shown").textContent = text;
    $("more").hidden = matching <= shown;
    var chip = $("f-set");
    chip.hidden = !state.set;
    $("f-set-label").textContent = state.setLabel;
  }
  function syncControls() {
    $("f-tier").value = state.tier;
    $("f-outcome").value = state.outcome;
    $("f-stage").value = state.stage;
    $("f-tag").value = state.tag;
    $("f-search").value = state.q;
    if ($("f-newly")) $("f-newly").checked = state.newly;
  }
  function reset() {
    state.tier = state.outcome = state.stage = state.tag = state.q = "";
    state.newly = false; state.set = null; state.setLabel = "";
  }
  function useSet(indices, label) {
    reset();
    state.set = {};
    indices.forEach(function (i) { state.set[i] = true; });
    state.setLabel = label + " (" + indices.length + " item" + (indices.length === 1 ? "" : "s") + ")";
    syncControls(); apply(); goToCases();
  }
  function goToCases() { var c = $("cases"); if (c && c.scrollIntoView) c.scrollIntoView(); }

  function bind(id, ev, fn) { var e = $(id); if (e) e.addEventListener(ev, fn); }
  bind("f-tier", "change", function (e) { state.tier = e.target.value; apply(); });
  bind("f-outcome", "change", function (e) { state.outcome = e.target.value; apply(); });
  bind("f-stage", "change", function (e) { state.stage = e.target.value; apply(); });
  bind("f-tag", "change", function (e) { state.tag = e.target.value; apply(); });
  bind("f-search", "input", function (e) { state.q = e.target.value.trim().toLowerCase(); apply(); });
  bind("f-newly", "change", function (e) { state.newly = e.target.checked; apply(); });
  bind("f-set-clear", "click", function () { state.set = null; state.setLabel = ""; apply(); });
  bind("f-clear", "click", function () { reset(); syncControls(); apply(); });
  bind("more-rows", "click", function () { state.limit += PAGE; apply(true); });
  bind("all-rows", "click", function () { state.limit = rows.length; apply(true); });

  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button") : null;
    if (!b) return;
    if (b.classList.contains("gate-filter")) {
      useSet(INDEX.gates[Number(b.getAttribute("data-gate"))] || [], "gate " + b.getAttribute("data-label"));
    } else if (b.classList.contains("transition-filter")) {
      useSet(INDEX.transitions[b.getAttribute("data-transition")] || [], b.getAttribute("data-label"));
    } else if (b.classList.contains("stage-filter")) {
      reset();
      state.stage = b.getAttribute("data-stage");
      state.tier = b.getAttribute("data-tier") || "";
      syncControls(); apply(); goToCases();
    }
  });

  // A gate row opens its full reasoning (the row below it) on a click anywhere but its filter button.
  function toggleGate(row) {
    var i = row.getAttribute("data-gate");
    var more = document.querySelector('tr.gate-more[data-gate-more="' + i + '"]');
    var btn = row.querySelector("button.gate-toggle");
    if (!more || !btn) return;
    var open = more.hidden;
    more.hidden = !open;
    btn.setAttribute("aria-expanded", open ? "true" : "false");
  }
  document.addEventListener("click", function (e) {
    var row = e.target.closest ? e.target.closest("tr.gate") : null;
    if (!row || (e.target.closest("button") && !e.target.closest("button.gate-toggle"))) return;
    toggleGate(row);
  });

  if (table) {
    table.tBodies[0].addEventListener("click", function (e) {
      var tr = e.target.closest ? e.target.closest("tr") : null;
      if (!tr || !tr.classList.contains("case")) return;
      toggle(Number(tr.getAttribute("data-i")));
    });
  }
  function toggle(i) {
    var tr = rows[i];
    var btn = tr.querySelector("button.open");
    var open = btn.getAttribute("aria-expanded") !== "true";
    btn.setAttribute("aria-expanded", open ? "true" : "false");
    var d = detailRows[i];
    if (open && !d) {
      d = document.createElement("tr");
      d.className = "detail";
      var td = document.createElement("td");
      td.colSpan = tr.cells.length;
      td.appendChild(renderItem(i));
      d.appendChild(td);
      tr.parentNode.insertBefore(d, tr.nextSibling);
      detailRows[i] = d;
    }
    if (d) d.hidden = !open;
  }

  /* ---------- DOM helpers (text only) ---------- */
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (var k = 1; k < arguments.length; k++) {
      var c = arguments[k];
      if (c === null || c === undefined || c === false) continue;
      // a string may be user or model text: isolated (<bdi>), so a bidi control in it
      // cannot reorder the labels beside it
      parent.appendChild(typeof c === "string" ? el("bdi", null, c) : c);
    }
    return parent;
  }
  function kv(pairs) {
    var box = el("div", "kv");
    pairs.forEach(function (p) {
      if (p[1] === null || p[1] === undefined || p[1] === "") return;
      var s = el("span");
      add(s, el("span", "k", p[0] + ": "), String(p[1]));
      box.appendChild(s);
    });
    return box;
  }
  function fmt(x) {
    if (x === null || x === undefined) return "n/a";
    if (typeof x !== "number") return String(x);
    return String(Math.round(x * 10000) / 10000);
  }
  function grid(headers, body) {
    var t = el("table", "grid");
    var tr = el("tr");
    headers.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    add(t, add(el("thead"), tr));
    var tb = el("tbody");
    body.forEach(function (cells) {
      var row = el("tr");
      cells.forEach(function (c) {
        if (c instanceof Node) row.appendChild(c);
        else row.appendChild(el("td", null, c === null || c === undefined ? "" : String(c)));
      });
      tb.appendChild(row);
    });
    return add(t, tb);
  }
  function td(text, cls) { return el("td", cls || null, text); }
  function listOf(items, fn) {
    var ul = el("ul");
    items.forEach(function (x) { ul.appendChild(fn(x)); });
    return ul;
  }
  function refText(r) {
    var parts = [];
    if (r.chunk_id) parts.push("chunk " + r.chunk_id);
    if (r.doc_id) parts.push("doc " + r.doc_id);
    if (r.quote) parts.push("“" + r.quote + "”");
    return parts.join(" · ");
  }

  /* ---------- the expanded item ---------- */
  function renderItem(i) {
    var it = item(i);
    var box = el("div", "dv");
    var g = it.golden;
    if (g.known) {
      add(box, el("div", "text question", g.question));
      if (g.history.length) {
        add(box, el("h4", null, "Conversation history (" + g.history.length + " turns)"));
        add(box, listOf(g.history, function (h) {
          return add(el("li"), el("span", "k muted", h.role + ": "), el("span", "text", h.content));
        }));
      }
    } else {
      add(box, el("p", "muted", "The results file holds no golden item for this id (no question, gold evidence or key facts)."));
    }
    add(box, kv([["id", it.id], ["split", it.split],
      ["tags", Object.keys(it.tags).map(function (k) { return k + "=" + it.tags[k]; }).join(" ")],
      ["expected action", g.known ? g.expected_action : ""]]));
    if (g.known) renderGolden(box, g);
    var retrieval = it.tiers.filter(function (t) { return t.ranked; })[0];
    it.tiers.forEach(function (t, ti) { box.appendChild(renderTier(it, i, t, ti)); });
    if (!retrieval && it.tiers.length) add(box, el("p", "muted", "No ranked lists: the retrieval tier did not run on this item."));
    return box;
  }

  function renderGolden(box, g) {
    add(box, el("h4", null, "Gold evidence (" + g.evidence.length + " requirement" + (g.evidence.length === 1 ? "" : "s") + ")"));
    if (!g.evidence.length) add(box, el("p", "muted", "none: a negative item (the system should refuse or clarify)"));
    if (g.evidence.length) {
      var ol = el("ol");
      g.evidence.forEach(function (alts) {
        var li = el("li");
        if (alts.length === 1) li.textContent = refText(alts[0]);
        else { add(li, "any of:"); add(li, listOf(alts, function (a) { return el("li", null, refText(a)); })); }
        ol.appendChild(li);
      });
      add(box, ol);
    }
    if (g.key_facts.length) {
      add(box, el("h4", null, "Key facts (" + g.key_facts.length + ")"));
      add(box, listOf(g.key_facts, function (f) {
        var li = el("li", null, f.fact);
        if (f.source) add(li, el("span", "muted", "  — " + refText(f.source)));
        return li;
      }));
    }
    if (g.reference) add(box, el("h4", null, "Reference answer"), el("div", "text", g.reference));
    if (g.answers.length) add(box, el("h4", null, "Accepted answers"), listOf(g.answers, function (a) { return el("li", "text", a); }));
    if (g.must_contain.length || g.must_not_contain.length) {
      add(box, kv([["must contain", g.must_contain.join(" | ")], ["must not contain", g.must_not_contain.join(" | ")]]));
    }
  }

  function renderTier(it, i, t, ti) {
    var b = el("div", "tier-block tb-" + t.outcome);
    var h = el("h4");
    add(h, t.tier + ": ", el("span", "o-" + t.outcome, t.outcome));
    if (t.stage) add(h, " at ", el("span", "stage stage-lost", t.stage));
    add(h, el("span", "muted", "  (" + fmt(t.duration) + " s)"));
    add(b, h);
    if (t.message) add(b, el("div", t.outcome === "error" ? "error-msg" : "text", t.message));
    if (t.degraded) add(b, el("div", "degraded", "degraded: " + (t.degradation_reason || "no reason given")));
    if (t.traceback) { var d = el("details"); add(d, el("summary", null, "traceback"), el("pre", null, t.traceback)); add(b, d); }
    if (t.ranked) renderRanked(b, t.ranked, it.lost_at);
    if (t.context) renderContext(b, t.context);
    if (t.answer !== undefined) renderAnswer(b, t, i, ti);
    if (t.checks) {
      add(b, el("h4", null, "Checks (" + t.checks.filter(function (c) { return c.passed; }).length + " of " + t.checks.length + " passed)"));
      add(b, grid(["check", "result", "message"], t.checks.map(function (c) {
        return [c.name, td(c.passed ? "pass" : "fail", c.passed ? "o-pass" : "o-fail"), c.message];
      })));
    }
    if (t.judge) renderJudge(b, t.judge);
    if (t.passk) renderPassk(b, t.passk);
    if (t.dialogue) renderDialogue(b, t.dialogue);
    if (typeof VIEWS[t.tier] === "function") {  /* a tier's own view (Tier.report_fragment) */
      var own = el("div", "tier-view");
      VIEWS[t.tier](own, t, { el: el, add: add, kv: kv, grid: grid, fmt: fmt });
      add(b, own);
    }
    var mk = Object.keys(t.metrics);
    if (mk.length) {
      var det = el("details");
      add(det, el("summary", null, "metrics (" + mk.length + ")"));
      add(det, grid(["metric", "value"], mk.map(function (k) { return [k, fmt(t.metrics[k])]; })));
      add(b, det);
    }
    if (t.usage) add(b, kv(Object.keys(t.usage).map(function (k) { return [k.replace(/_/g, " "), t.usage[k]]; })));
    if (t.extra) { var x = el("details"); add(x, el("summary", null, "other details"), el("pre", null, JSON.stringify(t.extra, null, 2))); add(b, x); }
    return b;
  }

  function renderRanked(b, r, lostAt) {
    var stages = Object.keys(r.lists);
    var lost = {};
    lostAt.forEach(function (s) { lost[s] = true; });
    if (r.gold_ranks.length) {
      add(b, el("h4", null, "Gold ranks per stage (" + r.gold_ranks.length + " requirement" + (r.gold_ranks.length === 1 ? "" : "s") + "; – = not in the stage's list)"));
      var t = el("table", "grid gold-ranks");
      var hr = el("tr");
      add(hr, el("th", null, "requirement"));
      stages.forEach(function (s) { hr.appendChild(el("th", lost[s] ? "lost" : null, s)); });
      add(t, add(el("thead"), hr));
      var tb = el("tbody");
      r.gold_ranks.forEach(function (g, gi) {
        var row = el("tr");
        add(row, el("td", null, "R" + (gi + 1)));
        stages.forEach(function (s) {
          var v = g[s];
          var missing = v === null || v === undefined;
          row.appendChild(el("td", missing && lost[s] ? "lost" : (missing ? "muted" : "gold"), missing ? "–" : "rank " + v));
        });
        tb.appendChild(row);
      });
      add(b, add(t, tb));
    } else if (r.gold_docs.length === 0) {
      add(b, el("p", "muted", "No gold ranks: a negative item (no gold evidence)."));
    }
    var depth = 0;
    stages.forEach(function (s) { depth = Math.max(depth, r.lists[s].length); });
    if (!depth) return;
    var det = el("details");
    det.open = lostAt.length > 0;
    add(det, el("summary", null, "Ranked lists per stage (top " + depth + "; gold highlighted" + (lostAt.length ? ", failing stage in red" : "") + ")"));
    var rt = el("table", "grid ranked");
    var h = el("tr");
    add(h, el("th", "num", "#"));
    stages.forEach(function (s) { h.appendChild(el("th", lost[s] ? "lost" : null, s + (lost[s] ? " ✗" : ""))); });
    add(rt, add(el("thead"), h));
    var body = el("tbody");
    for (var k = 0; k < depth; k++) {
      var row = el("tr");
      add(row, el("td", "num", String(k + 1)));
      stages.forEach(function (s) {
        var hit = r.lists[s][k];
        if (!hit) { row.appendChild(el("td")); return; }
        var reqs = r.gold[String(hit[0])];
        var cell = el("td", reqs ? "gold" : null);
        add(cell, el("span", "mono", S(hit[0])), el("span", "muted", " " + fmt(hit[1])));
        if (reqs) add(cell, el("span", "gold-mark", " gold R" + reqs.join(",R")));
        row.appendChild(cell);
      });
      body.appendChild(row);
    }
    add(det, add(rt, body));
    if (r.gold_docs.length && !Object.keys(r.gold).length) {
      add(det, el("p", "muted", "Gold is given at document level (" + r.gold_docs.map(function (d) { return d.join(" or "); }).join("; ") + "): chunks are not highlighted."));
    }
    add(b, det);
  }

  function renderContext(b, ctx) {
    add(b, el("h4", null, "Context given to the generator (" + ctx.length + " chunk" + (ctx.length === 1 ? "" : "s") + ")"));
    var ol = el("ol", "context");
    ctx.forEach(function (c) {
      var d = el("details");
      var sm = el("summary");
      add(sm, S(c.label) || S(c.chunk), el("span", "muted mono", "  " + S(c.chunk)));
      add(d, sm, el("div", "text", S(c.text)));
      ol.appendChild(add(el("li"), d));
    });
    add(b, ol);
  }

  var MARKER = /\[(\d+)\]/g;
  function renderAnswer(b, t, i, ti) {
    var text = S(t.answer);
    var head = "Answer" + (t.refused ? " (refused)" : "") + (t.generator ? " — " + t.generator : "");
    add(b, el("h4", null, head));
    var numbers = {};
    (t.sources || []).forEach(function (s) { numbers[String(s.n)] = true; });
    var p = el("div", "text answer");
    var last = 0, m;
    MARKER.lastIndex = 0;
    while ((m = MARKER.exec(text)) !== null) {
      if (!numbers[m[1]]) continue;
      if (m.index > last) add(p, text.slice(last, m.index));
      var a = el("a", null, m[0]);
      a.href = "#src-" + i + "-" + ti + "-" + m[1];
      p.appendChild(a);
      last = m.index + m[0].length;
    }
    if (last < text.length) add(p, text.slice(last));
    if (!text) add(p, el("span", "muted", "(empty answer)"));
    add(b, p);
    if (t.sources && t.sources.length) {
      add(b, el("h4", null, "Sources (" + t.sources.length + ")"));
      var ol = el("ul", "sources");
      t.sources.forEach(function (s) {
        var li = el("li");
        li.id = "src-" + i + "-" + ti + "-" + s.n;
        add(li, el("strong", null, "[" + s.n + "] "), [S(s.book), S(s.section), s.pages].filter(Boolean).join(" · "),
          el("span", "muted mono", "  " + S(s.chunk)));
        ol.appendChild(li);
      });
      add(b, ol);
    }
  }

  function renderJudge(b, j) {
    add(b, kv([["judge model", j.model], ["engine", j.engine], ["calls", j.calls], ["mode", j.mode]]));
    if (j.blame && j.blame.length) {
      add(b, el("h4", null, "Whose fault" + (j.blame_side ? " (" + j.blame_side + ")" : " (unexplained)")));
      var ul = el("ul", "blame");
      j.blame.forEach(function (line) { add(ul, el("li", null, line)); });
      add(b, ul);
    }
    if (j.diagnosis) {
      add(b, kv([["undecided claims", j.diagnosis.unknown_claims], ["undecided key facts", j.diagnosis.unknown_facts],
        ["inconsistent checks", j.diagnosis.inconsistent],
        ["second call for claims", j.claims_second_call === undefined ? "no" : "added " + j.claims_second_call]]));
    }
    if (j.claims) {
      add(b, el("h4", null, "Claims (" + j.claims.length + ")"));
      var level = j.claims.some(function (c) { return c.chunks !== undefined; });  // the claim-level checks
      add(b, grid(level ? ["claim", "verdict", "chunks", "reference", "reason"] : ["claim", "verdict", "reason"],
        j.claims.map(function (c) {
          var row = [c.claim, td(c.verdict, c.verdict === "yes" ? "o-pass" : (c.verdict === "no" ? "o-fail" : "o-skip"))];
          if (level) row.push((c.chunks || []).map(function (n) { return "[" + n + "]"; }).join(" "), c.reference || "");
          row.push(c.reason);
          return row;
        })));
    }
    if (j.key_facts) {
      var covered = j.key_facts.filter(function (k) { return k.verdict === "covered"; }).length;
      add(b, el("h4", null, "Key-fact coverage (" + covered + " of " + j.key_facts.length + " covered)"));
      add(b, grid(["#", "fact", "verdict", "reason"], j.key_facts.map(function (k) {
        return [k.index, k.fact, td(k.verdict, k.verdict === "covered" ? "o-pass" : (k.verdict === "not_covered" ? "o-fail" : "o-skip")), k.reason];
      })));
    }
    if (j.relevance) add(b, kv([["relevance", j.relevance.verdict], ["reason", j.relevance.reason]]));
    if (j.citations && j.citations.length) {
      add(b, el("h4", null, "Citations (" + j.citations.length + ")"));
      add(b, grid(["marker", "sentence", "supported", "reason"], j.citations.map(function (c) {
        return ["[" + c.marker + "]", c.sentence, td(c.supported ? "yes" : "no", c.supported ? "o-pass" : "o-fail"), c.reason];
      })));
    }
    if (j.correctness) {
      add(b, kv(["tp", "fp", "fn"].map(function (k) { return [k + " (" + (j.correctness[k] || []).length + ")", (j.correctness[k] || []).join(" | ")]; })));
    }
    if (j.deepeval) {
      add(b, grid(["metric", "score", "reason"], Object.keys(j.deepeval).map(function (k) {
        return [k, fmt(j.deepeval[k].score), j.deepeval[k].reason || ""];
      })));
    }
    if (j.skipped) add(b, kv(Object.keys(j.skipped).map(function (k) { return ["skipped " + k, j.skipped[k]]; })));
    ["repair_errors", "rejected_modes"].forEach(function (k) {
      if (j[k]) add(b, el("div", "error-msg", k.replace("_", " ") + ": " + j[k].join("; ")));
    });
  }

  function renderPassk(b, p) {
    add(b, el("h4", null, "Repeated trials: c/n = " + fmt(p.c) + "/" + fmt(p.n) + ", k = " + fmt(p.k)));
    add(b, kv([["pass@" + p.k, fmt(p.pass_at_k)], ["pass^" + p.k, fmt(p.pass_hat_k)], ["class", p.class],
      ["Wilson 95%", p.wilson[0] === null || p.wilson[0] === undefined ? "" : "[" + fmt(p.wilson[0]) + ", " + fmt(p.wilson[1]) + "]"],
      ["trials run", p.trials_run]]));
    if (p.deterministic_generator) add(b, el("p", "muted", "deterministic generator: 1 trial stands for all " + p.n + " (no pretend repeats)"));
    var row = el("div", "trials");
    p.trials.forEach(function (t) {
      var c = el("span", "cell o-" + t.outcome, "#" + t.trial + " " + t.outcome);
      c.title = [t.stage, t.message].filter(Boolean).join(": ");
      row.appendChild(c);
    });
    add(b, row);
    var failed = p.trials.filter(function (t) { return t.outcome !== "pass"; });
    if (failed.length) {
      add(b, grid(["trial", "outcome", "stage", "message"], failed.map(function (t) {
        return [t.trial, td(t.outcome, "o-" + t.outcome), t.stage || "", t.message];
      })));
    }
  }

  /* ---------- a dialogue's transcript (the dialogue tier) ---------- */
  function names(xs) { return (xs || []).join(", "); }
  function actionText(a, expected) {
    var parts = [a.action];
    if (expected && a.asks && a.asks.length) parts.push("ask " + names(a.asks));
    if (!expected && a.asked && a.asked.length) parts.push("asked " + names(a.asked));
    if (!expected && a.reasked && a.reasked.length) parts.push("re-asked " + names(a.reasked));
    if (a.hint_level) parts.push("hint " + a.hint_level);
    if (a.intent) parts.push("intent " + a.intent);
    return parts.join(" · ");
  }
  function renderDialogue(b, d) {
    add(b, el("h4", null, "Transcript (" + d.turns.length + " turn" + (d.turns.length === 1 ? "" : "s") + ", stop: " + d.stop + ")"));
    add(b, kv([["student", d.simulator], ["clarification limit", d.limit],
      ["failing step", d.step ? d.step + (d.turn !== null && d.turn !== undefined ? " at turn " + d.turn : "") : ""],
      ["system calls", d.calls.system_calls], ["student replies", d.calls.student_replies]]));
    if (d.error) add(b, el("div", "error-msg", d.error));
    d.turns.forEach(function (t) {
      var box = el("div", "dturn" + (t.failed.length ? " dturn-failed" : ""));
      var h = el("div", "dturn-head");
      add(h, el("b", null, "turn " + t.n), " ");
      if (t.failed.length) add(h, el("span", "stage stage-lost", "✗ " + t.failed.map(function (f) { return f.split(":")[0]; }).join(", ")));
      add(box, h);
      add(box, el("div", "dline student", "student: " + S(t.student)));
      var acts = [["expected", actionText(t.expected, true)]];
      if (t.actual) acts.push(["actual", actionText(t.actual, false)]);
      add(box, kv(acts));
      if (t.error) add(box, el("div", "error-msg", t.error));
      if (t.actual) {
        if (t.candidate !== undefined) {
          var pair = el("div", "dpair");
          add(pair, add(el("div", "dcol" + (t.candidate_leaks ? " leak" : "")), el("div", "k", "candidate (before interception" +
            (t.actual.interception ? ": " + t.actual.interception : "") + (t.candidate_leaks ? ", shows forbidden content" : "") + ")"),
            el("div", "text", S(t.candidate))));
          add(pair, add(el("div", "dcol" + (t.final_leaks ? " leak" : "")), el("div", "k", "final reply" + (t.final_leaks ? " (shows forbidden content)" : "")),
            el("div", "text", S(t.message))));
          add(box, pair);
        } else {
          add(box, el("div", "dline system" + (t.final_leaks ? " leak" : ""), "system: " + S(t.message) + (t.final_leaks ? "  [shows forbidden content]" : "")));
        }
      }
      if (t.evidence) renderTurnEvidence(box, t.evidence);
      if (t.reply) {
        var r = t.reply;
        var what = [];
        if (r.answered.length) what.push("gave " + names(r.answered));
        if (r.unanswerable.length) what.push("could not answer " + names(r.unanswerable));
        if (r.repeated.length) what.push("repeated " + names(r.repeated));
        add(box, el("div", "dline reply", "student replies: " + (r.text === null ? "(nothing more to say)" : S(r.text)) +
          (what.length ? "  [" + what.join("; ") + "]" : "")));
      }
      t.failed.forEach(function (f) { add(box, el("div", "error-msg", f)); });
      b.appendChild(box);
    });
    var rk = Object.keys(d.rates);
    if (rk.length) {
      var det = el("details");
      add(det, el("summary", null, "this dialogue's share of each rate (" + rk.length + ")"));
      add(det, grid(["rate", "numerator", "denominator"], rk.map(function (k) { return [k, fmt(d.rates[k][0]), fmt(d.rates[k][1])]; })));
      add(b, det);
    }
    if (d.hint_verdict) add(b, kv([["hint judge", d.hint_verdict.success === null ? "error" : (d.hint_verdict.success ? "success" : "not successful")],
      ["reason", d.hint_verdict.reason]]));
  }
  function renderTurnEvidence(box, e) {
    var head = "retrieved (" + e.items.length + ", gold at " + e.level + " level" + (e.judged ? "" : ", not judged") + ")";
    var det = el("details");
    if (e.problem) det.open = true;
    add(det, el("summary", e.problem ? "stage-lost" : null, head));
    if (e.note) add(det, el("p", "muted", e.note));
    add(det, grid(["#", "id", "doc", "gold", "text"], e.items.map(function (it, k) {
      return [k + 1, S(it.id), it.doc, td(it.gold ? "gold" : "", it.gold ? "gold" : null), S(it.text)];
    })));
    if (e.problem) add(det, el("div", "error-msg", e.problem));
    add(box, det);
  }

  apply();
})();
