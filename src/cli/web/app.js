/* gpumemtrace HTML page: builds the page from the report data embedded in #gmt-data.
 * Uses uPlot (timelines: drag to zoom, double-click to reset) and d3-flame-graph (click to
 * zoom into a frame). Everything is local: no request leaves the page. */
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('gmt-data').textContent);

  /* b in the largest binary unit it reaches: [value, unit] */
  function scaleBytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = 0;
    b = Number(b) || 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return [b, u[i]];
  }
  function fmtBytes(b) {
    var s = scaleBytes(b);
    return (s[1] === 'B' ? s[0].toFixed(0) : s[0].toFixed(2)) + ' ' + s[1];
  }
  /* Axis labels: bytes in binary steps (1, 2, 4 ... 512 of a unit) shown without trailing zeros
   * (uPlot's decimal steps gave 1.91, 3.81, 5.72 MiB), seconds with as many places as a short
   * run needs (a default of three repeated 0, 0, 0, 0.001 over a millisecond). */
  var BINARY_STEPS = (function () {
    var a = [];
    for (var k = 0; k < 6; k++)
      for (var m = 1; m < 1024; m *= 2) a.push(m * Math.pow(1024, k));
    return a;
  })();
  function axisBytes(b) {
    var s = scaleBytes(b);
    return String(+s[0].toFixed(2)) + ' ' + s[1];
  }
  function axisSeconds(v) { return String(+Number(v).toFixed(6)); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function section(id, title) {
    var s = el('section', { id: id });
    s.appendChild(el('h2', null, title));
    document.getElementById('main').appendChild(s);
    return s;
  }

  /* header */
  document.getElementById('title').textContent = 'gpumemtrace: ' + data.file;
  document.getElementById('meta').textContent = data.meta;

  /* summary cards */
  var sum = section('summary', 'Summary');
  var cards = el('div', { 'class': 'cards' });
  data.cards.forEach(function (c) {
    var d = el('div', { 'class': 'card' });
    d.appendChild(el('span', null, c[0]));
    d.appendChild(el('b', null, c[1]));
    cards.appendChild(d);
  });
  sum.appendChild(cards);

  /* a merged report's ranks: each rank's own process, end and numbers */
  if (data.ranks && data.ranks.length) {
    var rs = section('ranks', 'Ranks');
    var rt = el('table', { id: 'ranks-table' });
    var rh = el('tr');
    [['rank', 'num'], ['pid', 'num'], ['host'], ['ended'], ['ran (s)', 'num'], ['dropped events', 'num'],
     ['peak', 'num'], ['leaked', 'num']].forEach(function (h) { rh.appendChild(el('th', { 'class': h[1] || '' }, h[0])); });
    rt.appendChild(rh);
    data.ranks.forEach(function (r) {
      var row = el('tr');
      [String(r.rank), String(r.pid), r.host, r.reason, r.ran == null ? '?' : r.ran.toFixed(3),
       r.dropped < 0 ? '?' : String(r.dropped),
       (r.peak == null ? 'unknown' : fmtBytes(r.peak)) + (r.peak_short ? ' (not whole)' : ''),
       r.leaked == null ? 'unknown' : fmtBytes(r.leaked)].forEach(function (v, i) {
        row.appendChild(el('td', { 'class': i === 2 || i === 3 ? '' : 'num' }, v));
      });
      rt.appendChild(row);
    });
    rs.appendChild(rt);
  }

  /* search */
  var searchSec = section('find', 'Search');
  var input = el('input', { id: 'search', type: 'search',
                            placeholder: 'function, file or library' });
  searchSec.appendChild(input);
  searchSec.appendChild(el('span', { 'class': 'hint' },
                           '  filters the tables and highlights matching frames in the flame graphs'));

  /* timelines */
  var tl = section('timeline', 'Bytes in use over time (drag to zoom, double-click to reset)');
  if (!data.series.length) tl.appendChild(el('p', { 'class': 'empty' }, 'no timeline in this report'));
  data.series.forEach(function (s, i) {
    var box = el('div', { id: 'timeline-' + i, 'class': 'timeline' });
    tl.appendChild(box);
    var width = Math.max(400, (tl.clientWidth || 900) - 30);
    new uPlot({
      title: s.label + ' (peak ' + fmtBytes(s.peak) + ')',
      width: width, height: 220,
      scales: { x: { time: false } },
      /* the labels drawn are kept on the box too (data-x-ticks, data-y-ticks): the canvas
       * holds them as pixels only, and the page's test reads them there */
      axes: [{ label: 'seconds',
               values: function (u, vals) {
                 var l = vals.map(axisSeconds);
                 box.setAttribute('data-x-ticks', l.join('|'));
                 return l;
               } },
             { label: 'bytes', size: 80, incrs: BINARY_STEPS,
               values: function (u, vals) {
                 var l = vals.map(axisBytes);
                 box.setAttribute('data-y-ticks', l.join('|'));
                 return l;
               } }],
      series: [{ label: 's' },
               { label: s.label, stroke: '#1e88e5', fill: 'rgba(30,136,229,0.15)',
                 paths: uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
                 value: function (u, v) { return v == null ? '-' : fmtBytes(v); } }]
    }, [s.t, s.bytes], box);
  });

  /* flame graphs */
  var charts = [], flameBoxes = [];
  var WHERE_KEPT = 4; /* places kept per merged frame, for its tooltip and the search */
  function buildTree(groups, rootName) {
    var root = { name: rootName, value: 0, children: [] };
    groups.forEach(function (g) {
      /* frames: a cut list's remainder, one frame of its own (docs/cli.md); a group without
       * frames (no stack, or a stack of none) is one frame '[no stack] API', as folded and
       * speedscope name it: its bytes are a frame's, not a gap above the root */
      var names = g.frames || data.stacks[g.stack];
      /* each frame's file and module (frameWhere: none in a page of an older gpumemtrace) */
      var wheres = !g.frames && data.frameWhere ? data.frameWhere[g.stack] : null;
      if (!names || !names.length) names = ['[no stack] ' + g.api];
      root.value += g.bytes;
      var node = root;
      names.forEach(function (n, k) {
        var next = null;
        for (var i = 0; i < node.children.length; i++)
          if (node.children[i].name === n) { next = node.children[i]; break; }
        if (!next) { next = { name: n, value: 0, children: [], where: [] }; node.children.push(next); }
        /* frames of one name merged from several places keep a few of their places */
        var w = wheres && typeof wheres[k] === 'string' ? wheres[k] : '';
        if (w && next.where.indexOf(w) < 0 && next.where.length < WHERE_KEPT) next.where.push(w);
        next.value += g.bytes;
        node = next;
      });
    });
    return root;
  }
  function flame(id, title, groups, rootName) {
    var s = section(id, title);
    if (!groups.length) { s.appendChild(el('p', { 'class': 'empty' }, 'nothing to show')); return; }
    var box = el('div', { id: id + '-graph', 'class': 'flame' });
    s.appendChild(box);
    var chart = flamegraph().width(Math.max(400, (s.clientWidth || 900) - 30))
      .cellHeight(18).transitionDuration(0).minFrameSize(2)
      .label(function (d) {
        var w = d.data.where && d.data.where.length ? ' (' + d.data.where.join('; ') + ')' : '';
        return d.data.name + w + ': ' + fmtBytes(d.value);
      });
    /* The search matches a frame's name, file and module as the tables match rows: a
     * case-insensitive substring, never a regular expression (the chart's own matcher made the
     * term one, so "libstdc++" or "(" threw on every keystroke). */
    function has(text, term) {
      return typeof text === 'string' && text.toLowerCase().indexOf(term) >= 0;
    }
    chart.setSearchMatch(function (d, term) {
      var f = d && d.data ? d.data : null;
      if (!term || !f) return false;
      return has(f.name, term) || (f.where || []).some(function (w) { return has(w, term); });
    });
    box.__data__ = buildTree(groups, rootName);
    chart(selectionOf(box));
    charts.push(chart);
    flameBoxes.push(box);
  }
  /* The chart draws a new frame's rect width and label text through d3 transitions, and these
   * run on animation-frame timers even at transitionDuration(0) (the rect's own keeps d3's
   * default 250 ms): a picture taken as the page loads (headless Chromium's --screenshot
   * without --virtual-time-budget, its --dump-dom even with one) caught the rects part grown,
   * none at its width. So the draws made at load (the first, and a #search= one's) are
   * finished here, at once: each frame's rect gets its group's width and its label its name
   * (what the transitions would end at), and the transitions still pending on them are ended
   * as d3's interrupt() ends them (the bundle does not export it). A click's zoom, after load,
   * keeps its transitions. */
  function endTransitions(node) {
    var pending = node.__transition;
    if (!pending) return;
    for (var id in pending) {
      var t = pending[id];
      if (t && t.timer && typeof t.timer.stop === 'function') t.timer.stop();
      if (t) t.state = 6; /* d3-transition's ENDED: its timer's callback, if called, stops */
    }
    delete node.__transition;
  }
  function finishDraw(box) {
    Array.prototype.forEach.call(box.querySelectorAll('g.frame'), function (g) {
      endTransitions(g);
      var rect = g.querySelector('rect'), label = g.querySelector('.d3-flame-graph-label');
      if (rect) { endTransitions(rect); rect.setAttribute('width', g.getAttribute('width')); }
      if (label) { endTransitions(label); label.textContent = g.getAttribute('name'); }
    });
  }
  /* d3-flame-graph bundles d3-selection but does not export it: the chart needs from the
   * selection it is called on only each(), datum() and selectAll().remove(). */
  function selectionOf(node) {
    return {
      each: function (f) { f.call(node, node.__data__, 0, [node]); return this; },
      datum: function (v) {
        if (!arguments.length) return node.__data__;
        node.__data__ = typeof v === 'function' ? v.call(node, node.__data__, 0, [node]) : v;
        return this;
      },
      selectAll: function (q) {
        var list = node.querySelectorAll(q);
        return { remove: function () { list.forEach(function (n) { n.remove(); }); } };
      }
    };
  }
  flame('flame-leaks', 'Flame graph: leaks (bytes live ' + data.when + ', outermost frame at the bottom)',
        data.leakGroups, 'leaks');
  data.peaks.forEach(function (p, i) {
    flame('flame-peak-' + i, 'Flame graph: peak owners on ' + p.label + ' (' + fmtBytes(p.bytes) +
          ' at ' + p.time.toFixed(3) + ' s)', p.groups, 'peak ' + p.label);
  });

  /* tables */
  var tables = [];
  /* note: a line above the table (what the list rests on), or in place of 'none' */
  function table(id, title, head, rows, note) {
    var s = section(id, title);
    if (note) s.appendChild(el('p', { id: id + '-note', 'class': rows.length ? 'note' : 'empty' }, note));
    if (!rows.length) { if (!note) s.appendChild(el('p', { 'class': 'empty' }, 'none')); return; }
    var t = el('table', { id: id + '-table' });
    var tr = el('tr');
    head.forEach(function (h) { tr.appendChild(el('th', { 'class': h[1] || '' }, h[0])); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = el('tr');
      r.forEach(function (v, i) { row.appendChild(el('td', { 'class': head[i][1] || '' }, v)); });
      row.setAttribute('data-text', r.join(' ').toLowerCase());
      t.appendChild(row);
    });
    s.appendChild(t);
    tables.push(t);
  }
  function groupRows(groups) {
    return groups.map(function (g) {
      return [fmtBytes(g.bytes), g.count == null ? '?' : String(g.count), g.kind, g.device, g.api,
              g.library || '', g.where];
    });
  }
  var gh = [['bytes', 'num'], ['allocations', 'num'], ['kind'], ['device'], ['api'], ['library'],
            ['nearest user frame', 'where']];
  table('leaks', 'Leaks (' + fmtBytes(data.leakBytes) + ' live ' + data.when + ')', gh, groupRows(data.leakGroups));
  data.peaks.forEach(function (p, i) {
    table('peak-' + i, 'Peak owners on ' + p.label, gh, groupRows(p.groups));
  });
  /* a list cut at GPUMEMTRACE_TOP says so, as the sites' does; samples not judged are said */
  var suspectsCut = data.suspectsTotal > data.suspects.length;
  table('suspects', 'Growth suspects' +
        (suspectsCut ? ' (the ' + data.suspects.length + ' of ' + data.suspectsTotal +
                       ' that grew most, GPUMEMTRACE_TOP)' : ''),
        [['grew by', 'num'], ['live', 'num'], ['device'], ['nearest user frame', 'where']],
        data.suspects.map(function (s) { return [fmtBytes(s.growth), fmtBytes(s.live), s.device, s.where]; }),
        data.growthNote);
  /* a list the report does not have (null: written before it existed) is said, not "none" */
  var OLDER = 'not in this report (written before the section existed)';
  var sitesCut = data.sites && data.sitesTotal > data.sites.length;
  table('sites', 'Allocation sites (most allocations over the run' +
        (sitesCut ? '; the ' + data.sites.length + ' of ' + data.sitesTotal +
                    ' with the most, GPUMEMTRACE_TOP' : '') + ')',
        [['allocations', 'num'], ['live', 'num'], ['kind'], ['device'], ['api'], ['nearest user frame', 'where']],
        (data.sites || []).map(function (x) {
          return [String(x.allocs), String(x.live), x.kind, x.device, x.api, x.where];
        }), data.sites ? '' : OLDER);
  table('libraries', 'Bytes per library', [['library'], ['at the peak', 'num'], [data.when, 'num']],
        (data.libraries || []).map(function (l) { return [l.library, fmtBytes(l.peak), fmtBytes(l.exit)]; }),
        data.libraries ? '' : OLDER);
  table('fragmentation', 'Fragmentation', [['device'], ['fragmentation', 'num'], ['free in gaps', 'num'], ['largest gap', 'num']],
        data.frag.map(function (f) { return [f.label, f.value < 0 ? '?' : f.value.toFixed(2), fmtBytes(f.gaps), fmtBytes(f.largest)]; }));
  table('errors', 'Failed allocations', [['time (s)', 'num'], ['api'], ['size', 'num'], ['device'], ['error'], ['recovered'], ['nearest user frame', 'where']],
        data.errors.map(function (e) { return [e.time.toFixed(3), e.api, fmtBytes(e.size), e.device, e.error, e.recovered, e.where]; }));

  function applySearch() {
    var term = input.value.trim().toLowerCase();
    tables.forEach(function (t) {
      Array.prototype.forEach.call(t.querySelectorAll('tr[data-text]'), function (r) {
        r.className = term && r.getAttribute('data-text').indexOf(term) < 0 ? 'hidden' : '';
      });
    });
    charts.forEach(function (c) { if (term) c.search(term); else c.clear(); });
  }
  input.addEventListener('input', applySearch);
  /* page.html#search=TERM opens the page with that search (a link to share, and testable) */
  var m = /[#&]search=([^&]*)/.exec(window.location.hash);
  if (m) {
    var text = m[1];
    try { text = decodeURIComponent(text); } catch (e) { /* bad %-escapes: the text as it is */ }
    input.value = text;
    applySearch();
  }
  flameBoxes.forEach(finishDraw);
  document.body.setAttribute('data-ready', '1');
})();
