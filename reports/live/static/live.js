/* ctxtap live view: virtualised lists over paged JSON, live refresh, in-progress requests.
 * Captured text is untrusted: it is only ever assigned with textContent. The one innerHTML is
 * the server's own chart SVG (its texts escaped by the server). Talks to its own origin only. */
(function () {
  "use strict";
  var ROW = 30, PAGE = 100;
  var main = document.querySelector("main");
  var view = main ? main.getAttribute("data-view") : "";
  var palette = {};
  (function () {
    var node = document.getElementById("live-palette");
    (node ? JSON.parse(node.textContent) : []).forEach(function (p) { palette[p.name] = p; });
  })();

  function h(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) { Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); }); }
    if (text != null) { node.textContent = String(text); }
    return node;
  }
  function num(n) { return n == null ? "–" : Number(n).toLocaleString("en-US"); }
  function ms(v) { return v == null ? "–" : (v < 1000 ? Math.round(v) + " ms" : (v / 1000).toFixed(1) + " s"); }
  function pct(v) { return v == null ? "–" : Math.round(v * 100) + "%"; }
  function money(v) { return v == null ? "–" : "$" + Number(v).toFixed(v < 1 ? 4 : 2); }
  function when(ts) { return ts == null ? "–" : new Date(ts * 1000).toLocaleTimeString(); }
  function getJson(url) {
    return fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) { throw new Error("HTTP " + r.status); }
      return r.json();
    });
  }
  function q(v) { return encodeURIComponent(v); }

  /* -- row builders ------------------------------------------------------------------------ */
  function cell(row, text, cls) { row.appendChild(h("span", cls ? { "class": cls } : null, text)); }
  function sessionRow(c, s) {
    var a = h("a", { "class": "vrow", href: "/c/" + c + "/session?id=" + q(s.session_id), role: "row" });
    cell(a, s.client); cell(a, s.session_id); cell(a, s.models || "");
    cell(a, num(s.n_requests), "n"); cell(a, num(s.input_tokens_reported != null ? s.input_tokens_reported
      : s.input_tokens_estimated), "n");
    cell(a, pct(s.cache_hit_rate), "n"); cell(a, money(s.cost_usd), "n"); cell(a, num(s.n_errors), "n");
    cell(a, when(s.first_ts), "n");
    if (s.n_errors) { a.classList.add("err"); }
    return a;
  }
  function sourceBar(sources, total) {
    var bar = h("span", { "class": "bar" });
    sources.forEach(function (s) {
      var p = palette[s[0]] || { fill: "#999", label: s[0] };
      var seg = h("i", { title: (p.label || s[0]) + ": " + num(s[1]) + " tokens" });
      seg.style.width = (total ? (100 * s[1] / total) : 0) + "%";
      seg.style.background = p.fill;
      bar.appendChild(seg);
    });
    return bar;
  }
  function requestRow(c, r) {
    var a = h("a", { "class": "vrow", href: "/c/" + c + "/request?id=" + q(r.request_id), role: "row",
                     "data-request": r.request_id });
    cell(a, "#" + r.num, "n"); cell(a, r.thread + " · " + (r.purpose || ""));
    cell(a, r.status == null ? "–" : String(r.status));
    var total = r.sources.reduce(function (t, s) { return t + s[1]; }, 0);
    var wrap = h("span"); wrap.appendChild(sourceBar(r.sources, total)); a.appendChild(wrap);
    cell(a, num(r.input_tokens_estimated), "n"); cell(a, num(r.input_tokens_reported), "n");
    var chip = h("span"); chip.appendChild(h("span", { "class": "chip " + (r.cache_status || ""), title: r.cache },
                                             r.cache)); a.appendChild(chip);
    cell(a, ms(r.ttfb_ms), "n"); cell(a, ms(r.duration_ms), "n");
    var calls = r.calls.map(function (t) { return t[0] + (t[1] && t[1] !== "ok" ? " (" + t[1] + ")" : ""); });
    cell(a, calls.length ? "→ " + calls.join(", ") : "");
    if (r.error_layer) { a.classList.add("err"); a.title = r.error_layer + ": " + (r.error_message || ""); }
    return a;
  }

  /* -- a virtualised list: only the visible rows exist, pages fetched on demand ------------ */
  function VList(el) {
    this.el = el;
    this.c = el.getAttribute("data-c");
    this.kind = el.getAttribute("data-kind");
    this.session = el.getAttribute("data-session");
    this.body = el.querySelector(".vbody");
    this.space = el.querySelector(".vspace");
    this.pages = {};
    this.nodes = {};  /* row index -> {key: its data, node} of the rows drawn */
    this.loading = {};
    this.total = 0;
    this.generation = 0;
    var self = this, pending = false;
    /* resolved when the first page has arrived (or failed): the charts wait for it, so their
       query never competes with the rows a reader is waiting for */
    this.ready = new Promise(function (resolve) { self.markReady = resolve; });
    this.body.addEventListener("scroll", function () {
      if (pending) { return; }
      pending = true;
      window.requestAnimationFrame(function () { pending = false; self.render(); });
    });
  }
  VList.prototype.url = function (offset, cards) {
    var base = "/api/c/" + this.c + "/" + this.kind + "?offset=" + offset + "&limit=" + PAGE;
    return this.session != null ? base + "&session=" + q(this.session) + (cards ? "&cards=1" : "") : base;
  };
  VList.prototype.load = function (page) {
    var self = this, gen = this.generation;
    if (this.loading[page]) { return; }
    this.loading[page] = true;
    var cards = this.cardsDue;  /* the session's cards come with a refresh's first page */
    this.cardsDue = false;
    getJson(this.url(page * PAGE, cards)).then(function (data) {
      if (gen !== self.generation) { return; }
      if (data.session) { fillCards(data.session); }
      /* a reader at the end of a growing list stays at its end (a live timeline follows new rows) */
      var atEnd = self.total > 0 && self.body.scrollTop + self.body.clientHeight >= self.total * ROW - ROW;
      var grew = data.total > self.total;
      self.pages[page] = data.rows;
      self.total = data.total;
      if (atEnd && grew) {
        self.space.style.height = (self.total * ROW) + "px";
        self.body.scrollTop = self.total * ROW;
      }
      self.loading[page] = false;
      self.render();
      self.markReady();
    }).catch(function () {
      self.loading[page] = false;
      self.markReady();
      if (gen === self.generation) { window.setTimeout(function () { self.render(); }, 1000); }  /* try again */
    });
  };
  VList.prototype.reset = function () {
    this.generation += 1;
    this.loading = {};
    this.stale = this.pages;  /* drawn until the fresh page arrives: no flicker */
    this.pages = {};
    this.cardsDue = true;
    this.render();  /* asks for the pages in view; unchanged rows keep their nodes */
  };
  VList.prototype.render = function () {
    var top = this.body.scrollTop, height = this.body.clientHeight || 400;
    var first = Math.max(0, Math.floor(top / ROW) - 5), last = Math.floor((top + height) / ROW) + 5;
    var spaceHeight = (this.total * ROW) + "px";
    if (this.space.style.height !== spaceHeight) { this.space.style.height = spaceHeight; }
    var wanted = {};
    for (var p = Math.floor(first / PAGE); p <= Math.floor(last / PAGE); p++) {
      if (!this.pages[p]) { this.load(p); }
      wanted[p] = true;
    }
    /* A row whose data did not change keeps its node: a live update builds only the new and
       changed rows, so the page does little work while the agent it watches is busy. */
    var self = this, drawn = {}, frag = document.createDocumentFragment(), any = false;
    Object.keys(wanted).forEach(function (p) {
      var rows = self.pages[p] || (self.stale && self.stale[p]) || [];
      rows.forEach(function (r, k) {
        var i = Number(p) * PAGE + k;
        if (i < first || i > last) { return; }
        any = true;
        var key = JSON.stringify(r), have = self.nodes[i];
        if (have && have.key === key) { drawn[i] = have; return; }
        var node = self.kind === "sessions" ? sessionRow(self.c, r) : requestRow(self.c, r);
        node.style.top = (i * ROW) + "px";
        if (have) { have.node.remove(); }
        frag.appendChild(node);
        drawn[i] = { key: key, node: node };
      });
    });
    if (any || !this.stale) {
      Object.keys(this.nodes).forEach(function (i) { if (!drawn[i]) { self.nodes[i].node.remove(); } });
      this.nodes = drawn;
      this.space.appendChild(frag);
    }
    var count = document.querySelector('.vcount[data-for="' + this.el.id + '"]');
    var words = num(this.total) + " " + this.kind + (this.total > 50 ? " (scroll: rows are read a page at a time)" : "");
    if (count && count.textContent !== words) { count.textContent = words; }
  };

  /* -- charts, in progress, status ----------------------------------------------------------- */
  function refreshCharts() {
    var el = document.querySelector(".charts[data-session]");
    if (!el) { return; }
    fetch("/api/c/" + el.getAttribute("data-c") + "/charts?session=" + q(el.getAttribute("data-session")),
          { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (svg) { el.innerHTML = svg; })  /* server-made SVG, texts escaped there */
      .catch(function () {});
  }
  function fillCards(s) {
    var el = document.getElementById("session-cards");
    if (!el) { return; }
    var fmts = { num: num, pct: pct, money: money };
    Array.prototype.forEach.call(el.querySelectorAll("[data-field]"), function (v) {
      var key = v.getAttribute("data-field"), text = key in s ? fmts[v.getAttribute("data-fmt")](s[key]) : null;
      if (text !== null && v.textContent !== text) { v.textContent = text; }
    });
  }
  function showInProgress(state) {
    Array.prototype.forEach.call(document.querySelectorAll(".inprogress[data-c]"), function (box) {
      var cap = state.captures[Number(box.getAttribute("data-c"))];
      var items = cap ? cap.in_progress : [];
      var ul = box.querySelector("ul");
      ul.replaceChildren();
      var now = Date.now() / 1000;
      items.forEach(function (p) {
        var words = (p.client || "?") + " " + (p.host || "") + (p.path || "") + ": started " +
          Math.max(0, now - (p.ts_start || now)).toFixed(1) + " s ago, ";
        words += p.ts_first_chunk ? "streaming (first chunk after " + ms(1000 * (p.ts_first_chunk - p.ts_start)) + ")"
          : "waiting for the response";
        ul.appendChild(h("li", { "class": "pending" }, words));
      });
      box.hidden = items.length === 0;
    });
  }
  var lists = Array.prototype.map.call(document.querySelectorAll(".vlist"), function (el) { return new VList(el); });
  var mark = null, dataMark = null;
  /* A long poll: the server answers when something changed (or every 15 s), so an idle page costs
   * nothing. A session page asks about its own session: it refreshes when that session grew. */
  var stateUrl = view === "session" ? "/api/state?c=" + q(main.getAttribute("data-c")) + "&session=" +
    q(main.getAttribute("data-session")) : "/api/state";
  /* `fn` at most every `gap` ms: a call in between is put off to the end of the gap (once). */
  function throttle(fn, gap) {
    var due = 0, timer = null;
    return function run() {
      var wait = due - Date.now();
      if (wait <= 0) { due = Date.now() + gap; fn(); return; }
      if (!timer) { timer = window.setTimeout(function () { timer = null; run(); }, wait); }
    };
  }
  /* New data redraws the rows and cards at most every 0.3 s (an agent sending requests back to
   * back would otherwise have the page, and the server answering it, redraw several times a second
   * on the proxy's cores; a row still shows well within a second), the charts every 2 s. */
  var throttledCharts = throttle(refreshCharts, 2000);
  var changed = throttle(function () {
    lists.forEach(function (l) { l.reset(); });  /* a session's timeline brings its cards along */
    throttledCharts();
  }, 300);
  function poll() {
    var next = 5000;
    var url = stateUrl + (mark === null ? "" : (stateUrl.indexOf("?") < 0 ? "?" : "&") + "since=" + q(mark));
    getJson(url).then(function (state) {
      var status = document.getElementById("live-status");
      if (status) {
        status.textContent = state.live ? "live · updated " + new Date().toLocaleTimeString() : "finished capture";
        status.classList.toggle("on", !!state.live);
      }
      if (dataMark !== null && state.data_mark !== dataMark) { changed(); }
      dataMark = state.data_mark;
      mark = state.live ? state.mark : null;
      showInProgress(state);
      next = state.live ? 20 : 5000;
    }).catch(function () { next = 1000; }).then(function () { window.setTimeout(poll, next); });
  }

  function init() {
    lists.forEach(function (l) { l.render(); });
    Promise.all(lists.map(function (l) { return l.ready; })).then(refreshCharts);
    poll();
    if (view === "request" && window.ctxtapReport) {
      window.ctxtapReport.openViewer(main.getAttribute("data-ribbon"), Number(main.getAttribute("data-row")), -1);
    }
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
