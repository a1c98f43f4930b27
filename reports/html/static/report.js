/* ctxtap report: context-layout ribbons (canvas, all drawn on load) and the lazy block viewer.
 * Data lives in two <script type="application/json"> elements, parsed on first use.
 * Block texts are untrusted: they are only ever assigned with textContent.
 * An aggregated report's ribbons have merged rows (n: requests drawn as the last of them) and
 * left-out rows (gap: how many, q: the query that lists them); a left-out text is 0. */
(function () {
  "use strict";
  var COPY = -1, PREVIEW_CHARS = 1200;
  var DATA = null, TEXTS = null;

  function parseJson(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  function data() {
    if (!DATA) {
      DATA = parseJson("ctx-data") || { palette: [], strings: [""], occ: {}, ribbons: {} };
    }
    return DATA;
  }
  function texts() {
    if (!TEXTS) { TEXTS = parseJson("ctx-texts") || { texts: [], hashes: [], cap: 0 }; }
    return TEXTS;
  }
  function fmt(n) { return n == null ? "–" : Number(n).toLocaleString("en-US"); }
  function fmtBytes(b) {
    if (b < 1000) { return b + " B"; }
    if (b < 1e6) { return (b / 1e3).toFixed(1) + " KB"; }
    return (b / 1e6).toFixed(2) + " MB";
  }
  function str(i) { return data().strings[i] || ""; }
  function h(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) { Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); }); }
    if (text != null) { node.textContent = String(text); }
    return node;
  }

  /* -- ribbon rows: ops against the base row ------------------------------------------------ */
  function rowOcc(rib, i) {
    rib._dec = rib._dec || [];
    if (rib._dec[i]) { return rib._dec[i]; }
    var row = rib.rows[i], base = row.base >= 0 ? rowOcc(rib, row.base) : [], out = [], ops = row.ops || [];
    for (var k = 0; k < ops.length; k += 2) {
      var a = ops[k], n = ops[k + 1];
      if (a === COPY) { var p = out.length; for (var j = 0; j < n; j++) { out.push(base[p + j]); } }
      else { for (var m = 0; m < n; m++) { out.push(a + m); } }
    }
    rib._dec[i] = out;
    return out;
  }
  function rowPrefix(rib, i) {
    rib._pre = rib._pre || [];
    if (rib._pre[i]) { return rib._pre[i]; }
    var occ = rowOcc(rib, i), tok = data().occ.tok, pre = new Float64Array(occ.length + 1);
    for (var k = 0; k < occ.length; k++) { pre[k + 1] = pre[k] + tok[occ[k]]; }
    rib._pre[i] = pre;
    return pre;
  }

  /* -- drawing --------------------------------------------------------------------------------- */
  function fills(g) {
    return data().palette.map(function (p) {
      if (!p.hatch) { return p.fill; }
      var c = document.createElement("canvas");
      c.width = 6; c.height = 6;
      var x = c.getContext("2d");
      x.fillStyle = p.fill; x.fillRect(0, 0, 6, 6);
      x.strokeStyle = p.hatch; x.lineWidth = 1.6;
      x.beginPath(); x.moveTo(-1, 7); x.lineTo(7, -1); x.stroke();
      return g.createPattern(c, "repeat");
    });
  }
  var MARK_COLOURS = { E: "#D55E00", M: "#E69F00", D: "#0072B2" };

  /* true once drawn; false while it has no width (in a closed <details>: drawn when opened) */
  function draw(el) {
    var rib = data().ribbons[el.getAttribute("data-ribbon")];
    var wrap = el.querySelector(".ribbon-wrap"), canvas = wrap && wrap.querySelector("canvas");
    if (!rib || !canvas) { return false; }
    var cssW = wrap.clientWidth;
    if (!cssW) { return false; }
    var n = rib.rows.length;
    var rh = n <= 30 ? 18 : Math.max(2, Math.min(10, Math.floor(720 / n)));
    var labels = rh >= 12;
    var ranges = rib.rows.some(function (r) { return r.n > 1 || r.gap; });
    var lw = labels ? 190 : (ranges ? 84 : 56), right = 40;
    var scale = rib.max > 0 ? (cssW - lw - right) / rib.max : 0;
    var ys = [], top = 2;
    for (var r = 0; r < n; r++) { ys.push(top); top += rib.rows[r].gap ? Math.max(rh, GAP_H) : rh; }
    ys.push(top);
    var height = top + 2, dpr = window.devicePixelRatio || 1;
    canvas.style.width = cssW + "px"; canvas.style.height = height + "px";
    canvas.width = Math.round(cssW * dpr); canvas.height = Math.round(height * dpr);
    var g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, cssW, height);
    var f = fills(g), tok = data().occ.tok, src = data().occ.src, seg = data().occ.seg;
    var gapLine = rh >= 6 ? 1 : 0, every = Math.max(1, Math.ceil(14 / rh));
    g.font = "11px system-ui, sans-serif"; g.textBaseline = "middle";
    for (var i = 0; i < n; i++) {
      if (rib.rows[i].gap) { drawGap(g, rib.rows[i], ys[i], ys[i + 1] - ys[i] - gapLine, cssW, lw); continue; }
      var occ = rowOcc(rib, i), y = ys[i], hgt = rh - gapLine, x = lw;
      var pendX = 0, pendW = 0, pendS = -1;
      for (var k = 0; k < occ.length; k++) {
        var o = occ[k], w = tok[o] * scale, s = src[o], parts = seg ? seg[o] : 0;
        if (w >= 2) {
          if (pendW > 0) { g.fillStyle = f[pendS]; g.fillRect(pendX, y, pendW, hgt); pendW = 0; }
          if (parts && parts.length && tok[o] > 0) {
            /* a block with sections of several sources: one sub-stripe per section */
            var sx = x, inner = Math.max(w - 0.6, 1);
            for (var q = 0; q < parts.length; q += 2) {
              var sw = inner * parts[q + 1] / tok[o];
              g.fillStyle = f[parts[q]]; g.fillRect(sx, y, Math.max(sw, 0.5), hgt); sx += sw;
            }
          } else {
            g.fillStyle = f[s]; g.fillRect(x, y, Math.max(w - 0.6, 1), hgt);
          }
        } else {
          if (pendW > 0 && s !== pendS && pendW >= 1) { g.fillStyle = f[pendS]; g.fillRect(pendX, y, pendW, hgt); pendW = 0; }
          if (pendW === 0) { pendX = x; pendS = s; }
          pendW += w;
        }
        x += w;
      }
      if (pendW > 0) { g.fillStyle = f[pendS]; g.fillRect(pendX, y, Math.max(pendW, 0.5), hgt); }
      var row = rib.rows[i];
      if (labels || i % every === 0) {
        g.fillStyle = "#374151";
        var text = labels ? row.l : row.l.split(" ")[0];
        g.fillText(text.length > 30 ? text.slice(0, 29) + "…" : text, 4, y + hgt / 2);
      }
      if (row.m) {
        for (var c = 0; c < row.m.length; c++) {
          g.fillStyle = MARK_COLOURS[row.m[c]] || "#000";
          if (rh >= 10) { g.fillText(row.m[c], x + 4 + c * 10, y + hgt / 2); }
          else { g.fillRect(x + 3 + c * 5, y, 4, Math.max(hgt, 1)); }
        }
      }
      if (row.n > 1 && rh >= 10) {
        g.fillStyle = "#6b7280";
        g.fillText("×" + fmt(row.n), x + 4 + (row.m ? row.m.length * 10 + 4 : 0), y + hgt / 2);
      }
    }
    el._geom = { lw: lw, rh: rh, scale: scale, n: n, ys: ys };
    return true;
  }

  var GAP_H = 14;
  function drawGap(g, row, y, hgt, cssW, lw) {
    g.fillStyle = "#eceef1"; g.fillRect(0, y, cssW, hgt);
    g.strokeStyle = "#9aa0a6"; g.setLineDash([4, 3]); g.lineWidth = 1;
    g.beginPath(); g.moveTo(0, y + 0.5); g.lineTo(cssW, y + 0.5); g.moveTo(0, y + hgt - 0.5); g.lineTo(cssW, y + hgt - 0.5);
    g.stroke(); g.setLineDash([]);
    g.fillStyle = "#374151";
    g.fillText(row.l + " — click for the query that lists them", lw, y + hgt / 2);
    for (var c = 0; c < (row.m || "").length; c++) {
      g.fillStyle = MARK_COLOURS[row.m[c]] || "#000"; g.fillText(row.m[c], 4 + c * 10, y + hgt / 2);
    }
  }

  function locate(el, ev) {
    var geom = el._geom, canvas = el.querySelector("canvas");
    if (!geom) { return null; }
    var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    var ys = geom.ys, lo_ = 0, hi_ = geom.n - 1;
    if (y < ys[0] || y >= ys[geom.n]) { return null; }
    while (lo_ < hi_) { var m_ = (lo_ + hi_ + 1) >> 1; if (ys[m_] <= y) { lo_ = m_; } else { hi_ = m_ - 1; } }
    var i = lo_;
    var rib = data().ribbons[el.getAttribute("data-ribbon")];
    if (x < geom.lw || !geom.scale || rib.rows[i].gap) { return { rib: rib, row: i, pos: -1 }; }
    var t = (x - geom.lw) / geom.scale, pre = rowPrefix(rib, i);
    if (t > pre[pre.length - 1]) { return { rib: rib, row: i, pos: -1 }; }
    var lo = 0, hi = pre.length - 2;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (pre[mid] <= t) { lo = mid; } else { hi = mid - 1; } }
    return { rib: rib, row: i, pos: lo };
  }

  function describe(o) {
    var d = data(), occ = d.occ, p = d.palette[occ.src[o]];
    var parts = [str(occ.path[o]), (p ? p.label : "?") + " · " + str(occ.kind[o]),
                 fmt(occ.tok[o]) + " tokens · " + fmtBytes(occ.b[o]), str(occ.attrs[o])];
    if (occ.tool[o]) { parts.push("tool " + str(occ.tool[o]) + (occ.err[o] ? " (error)" : "")); }
    if (occ.rule[o]) { parts.push("rule " + str(occ.rule[o])); }
    var sections = occ.seg ? occ.seg[o] : 0;
    if (sections && sections.length) {
      var names = [];
      for (var q = 0; q < sections.length; q += 2) {
        var sp = d.palette[sections[q]];
        names.push((sp ? sp.label : "?") + " " + fmt(sections[q + 1]));
      }
      parts.push("sections: " + names.join(", "));
    }
    return parts.join("\n");
  }

  /* -- tooltip --------------------------------------------------------------------------------- */
  var tip = null;
  function showTip(ev, text) {
    if (!tip) { tip = h("div", { "class": "tip", role: "tooltip" }); document.body.appendChild(tip); }
    tip.textContent = text;
    tip.style.display = "block";
    var x = Math.min(ev.clientX + 14, window.innerWidth - 380);
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = (ev.clientY + 16) + "px";
  }
  function hideTip() { if (tip) { tip.style.display = "none"; } }

  /* -- block viewer ---------------------------------------------------------------------------- */
  function textOf(o) {
    var t = texts(), idx = data().occ.txt[o];
    var entry = t.texts[idx];
    if (entry === 0) { return { left: true, bytes: data().occ.b[o] }; }
    entry = entry || ["", "", 0];
    return { head: entry[0], tail: entry[1], bytes: entry[2], hash: t.hashes[idx] || "", cap: t.cap };
  }
  function shellSql(cmd, sql) {
    return (cmd || "ctxtap sql CAPTURE") + ' "' + sql.replace(/([\\"$`])/g, "\\$1") + '"';
  }
  function sqlStr(v) { return "'" + String(v).replace(/'/g, "''") + "'"; }

  function showText(cell, o, where) {
    cell.textContent = "";
    var t = textOf(o);
    if (t.left) {
      cell.appendChild(h("div", { "class": "size-note" }, "Left out: this report's size bound has no room for this " +
        "text (" + fmt(t.bytes) + " bytes). Read it from the capture with:"));
      cell.appendChild(h("code", { "class": "query" }, shellSql(where.cmd, "SELECT text FROM t_block_content WHERE " +
        "content_hash = (SELECT content_hash FROM blocks WHERE request_id = " + sqlStr(where.id) +
        " AND position = " + where.pos + ")")));
      return;
    }
    var truncated = t.tail !== "";
    var note = h("div", { "class": "size-note" });
    var pre = h("pre", { "class": "text" });
    var preview = t.head.length > PREVIEW_CHARS;
    pre.textContent = preview ? t.head.slice(0, PREVIEW_CHARS) : fullText(t, truncated);
    note.textContent = preview
      ? "Preview: the first " + fmt(PREVIEW_CHARS) + " characters of " + fmt(t.bytes) + " bytes."
      : (truncated ? embedNote(t) : "Full text, " + fmt(t.bytes) + " bytes.");
    cell.appendChild(note);
    cell.appendChild(pre);
    if (preview) {
      var more = h("button", { type: "button", "class": "full-text" }, "Show full text (" + fmtBytes(t.bytes) + ")");
      more.addEventListener("click", function () {
        pre.textContent = fullText(t, truncated);
        note.textContent = truncated ? embedNote(t) : "Full text, " + fmt(t.bytes) + " bytes.";
        more.remove();
      });
      cell.appendChild(more);
    }
  }
  function utf8Len(s) { return new TextEncoder().encode(s).length; }
  function fullText(t, truncated) {
    if (!truncated) { return t.head; }
    var kept = utf8Len(t.head) + utf8Len(t.tail);
    return t.head + "\n\n[… " + fmt(t.bytes - kept) + " bytes not embedded in this report …]\n\n" + t.tail;
  }
  function embedNote(t) {
    return "Truncated: this report embeds the first and last parts (" + fmtBytes(utf8Len(t.head) + utf8Len(t.tail)) +
      ") of " + fmt(t.bytes) + " bytes. The full text is in the capture: ctxtap sql CAPTURE \"SELECT text FROM " +
      "t_block_content WHERE content_hash = '" + t.hash + "'\"";
  }

  function closeButton(viewer) {
    var close = h("button", { type: "button" }, "Close");
    close.addEventListener("click", function () { viewer.hidden = true; });
    return close;
  }

  function openGap(viewer, rib, row) {
    var head = h("div", { "class": "vh" });
    head.appendChild(h("strong", null, row.l.replace(/^… /, "")));
    head.appendChild(closeButton(viewer));
    viewer.appendChild(head);
    viewer.appendChild(h("p", { "class": "size-note" }, "These rows are left out to keep the report within its " +
      "size bound. Their blocks, in order, are listed by:"));
    viewer.appendChild(h("code", { "class": "query" }, row.q));
    viewer.scrollIntoView({ block: "nearest" });
  }

  /* opts.upto: show only the first n blocks (a request merged into a later one's row); opts.label: its name */
  function openViewer(ribId, rowIndex, selPos, opts) {
    var viewer = document.querySelector('[data-viewer="' + ribId + '"]');
    var rib = data().ribbons[ribId];
    if (!viewer || !rib || !rib.rows[rowIndex]) { return; }
    opts = opts || {};
    viewer.hidden = false;
    viewer.textContent = "";
    var row = rib.rows[rowIndex];
    if (row.gap) { openGap(viewer, rib, row); return; }
    var occ = rowOcc(rib, rowIndex), tokens = row.t;
    if (opts.upto != null && opts.upto < occ.length) {
      occ = occ.slice(0, opts.upto);
      tokens = occ.reduce(function (a, o) { return a + data().occ.tok[o]; }, 0);
    }
    var base = row.base >= 0 ? rowOcc(rib, row.base) : [];
    var head = h("div", { "class": "vh" });
    head.appendChild(h("strong", null, "Request " + (opts.label || row.l)));
    head.appendChild(h("span", null, fmt(occ.length) + " blocks · " + fmt(tokens) + " tokens (estimated)"));
    if (!opts.label) { head.appendChild(h("code", null, row.id)); }
    var onlyNew = h("label", null);
    var box = h("input", { type: "checkbox" });
    onlyNew.appendChild(box);
    onlyNew.appendChild(document.createTextNode(row.n > 1 ? " only blocks that differ from the thread's previous row"
      : " only blocks that differ from the thread's previous request"));
    head.appendChild(onlyNew);
    head.appendChild(closeButton(viewer));
    viewer.appendChild(head);
    if (row.n > 1) {
      viewer.appendChild(h("p", { "class": "size-note merged-note" }, opts.label
        ? "Drawn in the row " + row.l + ": " + fmt(row.n) + " requests that each resent the one before unchanged and " +
          "appended blocks. This request's blocks are the first " + fmt(occ.length) + " of that row."
        : fmt(row.n) + " requests drawn as one row: each resent the one before unchanged and appended blocks, so " +
          "each is a prefix of the last, whose blocks are listed. The requests table opens each one's own blocks."));
    }
    var where = { id: row.id, cmd: row.c || rib.c };
    var table = h("table", { "class": "blocks" });
    var thead = h("tr");
    ["#", "path", "source", "kind", "role · authority · scope · lifetime · type", "rule", "tokens", "bytes", "cache", "text"]
      .forEach(function (c, k) { thead.appendChild(h("th", k === 6 || k === 7 ? { "class": "n" } : null, c)); });
    table.appendChild(thead);
    var d = data(), o_ = d.occ, pal = d.palette, selected = null, marks = {};
    for (var b = 0; b + 1 < (row.bp || []).length; b += 2) { marks[row.bp[b]] = str(row.bp[b + 1]); }
    occ.forEach(function (o, pos) {
      var tr = h("tr", { "data-pos": String(pos) });
      var isNew = base[pos] !== o;
      if (isNew && row.base >= 0) { tr.className = "new"; }
      tr.appendChild(h("td", { "class": "n" }, pos));
      tr.appendChild(h("td", { "class": "code" }, str(o_.path[o])));
      var srcCell = h("td");
      var p = pal[o_.src[o]] || { fill: "#bbb", label: "?" };
      var sw = h("span", { "class": "swatch" });
      sw.style.background = p.hatch ? "repeating-linear-gradient(45deg," + p.fill + " 0 3px," + p.hatch + " 3px 5px)" : p.fill;
      srcCell.appendChild(sw);
      srcCell.appendChild(document.createTextNode(p.label));
      tr.appendChild(srcCell);
      tr.appendChild(h("td", null, str(o_.kind[o]) + (o_.tool[o] ? " · " + str(o_.tool[o]) : "") + (o_.err[o] ? " · error" : "")));
      tr.appendChild(h("td", null, str(o_.attrs[o])));
      tr.appendChild(h("td", { "class": "code" }, str(o_.rule[o])));
      tr.appendChild(h("td", { "class": "n" }, fmt(o_.tok[o])));
      tr.appendChild(h("td", { "class": "n" }, fmt(o_.b[o])));
      tr.appendChild(h("td", null, marks[pos] ? "breakpoint " + marks[pos] : ""));
      var btnCell = h("td");
      var btn = h("button", { type: "button", "class": "show-text", "aria-expanded": "false" }, "show");
      btn.addEventListener("click", function () { toggleText(tr, o, btn, { id: where.id, cmd: where.cmd, pos: pos }); });
      btnCell.appendChild(btn);
      tr.appendChild(btnCell);
      table.appendChild(tr);
      if (pos === selPos) { selected = tr; tr.classList.add("sel"); }
    });
    box.addEventListener("change", function () {
      Array.prototype.forEach.call(table.querySelectorAll("tr[data-pos]"), function (tr) {
        var hide = box.checked && !tr.classList.contains("new") && row.base >= 0;
        tr.hidden = hide;
        var next = tr.nextElementSibling;
        if (next && next.classList.contains("text-row")) { next.hidden = hide; }
      });
    });
    var scroller = h("div", { "class": "table-scroll" });
    scroller.appendChild(table);
    viewer.appendChild(scroller);
    if (selected) {
      toggleText(selected, occ[selPos], selected.querySelector("button.show-text"),
                 { id: where.id, cmd: where.cmd, pos: selPos });
      selected.scrollIntoView({ block: "nearest" });
    }
    viewer.scrollIntoView({ block: "nearest" });
  }

  function toggleText(tr, o, btn, where) {
    var next = tr.nextElementSibling;
    if (next && next.classList.contains("text-row")) {
      next.remove();
      btn.textContent = "show"; btn.setAttribute("aria-expanded", "false");
      return;
    }
    var textRow = h("tr", { "class": "text-row" });
    var cell = h("td", { colspan: "10" });
    textRow.appendChild(cell);
    tr.parentNode.insertBefore(textRow, tr.nextSibling);
    showText(cell, o, where);
    btn.textContent = "hide"; btn.setAttribute("aria-expanded", "true");
  }

  /* -- wiring ---------------------------------------------------------------------------------- */
  function wire(el) {
    var canvas = el.querySelector("canvas");
    if (!canvas) { return; }
    canvas.addEventListener("mousemove", function (ev) {
      var hit = locate(el, ev);
      if (!hit) { hideTip(); return; }
      var row = hit.rib.rows[hit.row];
      if (row.gap) { showTip(ev, row.l + "\nclick for the query that lists their blocks"); return; }
      var text = (row.n > 1 ? "Requests " + row.l + " (drawn as the last)" : "Request " + row.l) + " — " +
        fmt(row.t) + " tokens";
      if (hit.pos >= 0) { text += "\nblock " + hit.pos + ": " + describe(rowOcc(hit.rib, hit.row)[hit.pos]); }
      else { text += "\nclick to list its blocks"; }
      showTip(ev, text);
    });
    canvas.addEventListener("mouseleave", hideTip);
    canvas.addEventListener("click", function (ev) {
      var hit = locate(el, ev);
      if (hit) { openViewer(el.getAttribute("data-ribbon"), hit.row, hit.pos); }
    });
  }

  /* Every ribbon is drawn once the page has loaded, not as it scrolls into view: a full-page
   * capture, a printout and a reader jumping to a section must all find them drawn. */
  function drawAll() {
    Array.prototype.forEach.call(document.querySelectorAll(".ribbon[data-ribbon]"), function (el) {
      if (!el._drawn) { el._drawn = draw(el); }
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll(".ribbon[data-ribbon]"), wire);
    document.addEventListener("click", function (ev) {
      var target = ev.target.closest ? ev.target.closest("[data-open]") : null;
      if (!target) { return; }
      ev.preventDefault();
      var upto = target.getAttribute("data-upto");
      openViewer(target.getAttribute("data-open"), Number(target.getAttribute("data-row")), -1,
                 upto == null ? null : { upto: Number(upto), label: target.getAttribute("data-label") });
    });
    document.addEventListener("toggle", function (ev) {
      if (ev.target.open) {
        Array.prototype.forEach.call(ev.target.querySelectorAll(".ribbon[data-ribbon]"), function (el) {
          el._drawn = draw(el);
        });
      }
    }, true);
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        Array.prototype.forEach.call(document.querySelectorAll(".ribbon[data-ribbon]"), function (el) {
          if (el._drawn) { draw(el); }
        });
      }, 150);
    });
    /* the first frame draws them all; a page opened in a background tab gets no frames, so the
     * load event and printing draw whatever is still blank */
    window.requestAnimationFrame(drawAll);
    window.addEventListener("load", function () { window.setTimeout(drawAll, 0); });
    window.addEventListener("beforeprint", drawAll);
    if (window.matchMedia) {
      var print = window.matchMedia("print");
      if (print.addEventListener) { print.addEventListener("change", drawAll); }
    }
  }

  window.ctxtapReport = { openViewer: openViewer, draw: draw };
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
