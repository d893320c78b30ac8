/* judgesdk view: lays out the page's data (the JSON block "judgesdk-data", computed by judgesdk.view.data).
 *
 * Every text from the run reaches the DOM through textContent (txt/plain below), never innerHTML; hrefs are only
 * the page's own "#..." anchors (or a blob: URL this script made for an export). Invisible and direction-changing
 * characters are shown as marks, so a text cannot reorder or hide what is around it. The item table is
 * virtualised: only the rows in view exist in the DOM, so 100,000 rows filter and scroll without freezing.
 */
(function () {
  'use strict';

  var D = JSON.parse(document.getElementById('judgesdk-data').textContent);
  var ROW_H = 28;
  var CTL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/g;
  var ATTRS = { type: 1, value: 1, placeholder: 1, role: 1, min: 1, max: 1, step: 1, id: 1, 'aria-label': 1, 'aria-sort': 1, colspan: 1, open: 1 };
  var M = null; // derived arrays (build())
  var S = {
    tab: 'run', open: -1, missing: null,
    sort: { key: null, dir: 1 }, sorted: null, order: null,
    f: { c: -1, st: -1, m: -1, flag: '', q: '', min: '', max: '', gate: -1 },
    csort: { key: 'absdelta', dir: 1 }, corder: null,
  };
  var V = {}; // built views

  // -- safe DOM ---------------------------------------------------------------------------------------------------

  function ctlMark(ch) {
    return 'U+' + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
  }

  /** A text as DOM nodes: the text itself, with each invisible or direction-changing character as a visible mark. */
  function txt(value) {
    var s = value == null ? '' : String(value);
    CTL.lastIndex = 0;
    if (!CTL.test(s)) return document.createTextNode(s);
    var frag = document.createDocumentFragment();
    var last = 0, m;
    CTL.lastIndex = 0;
    while ((m = CTL.exec(s)) !== null) {
      if (m.index > last) frag.appendChild(document.createTextNode(s.slice(last, m.index)));
      var mark = document.createElement('span');
      mark.className = 'ctl';
      mark.textContent = ctlMark(m[0]);
      mark.title = 'an invisible or direction-changing character (' + ctlMark(m[0]) + '), shown as a mark';
      frag.appendChild(mark);
      last = m.index + m[0].length;
    }
    if (last < s.length) frag.appendChild(document.createTextNode(s.slice(last)));
    return frag;
  }

  /** A text for a table cell: control characters written as [U+XXXX]. */
  function plain(value) {
    var s = value == null ? '' : String(value);
    return s.replace(CTL, function (ch) { return '[' + ctlMark(ch) + ']'; });
  }

  function h(tag, opts) {
    var e = document.createElement(tag);
    if (opts) {
      for (var k in opts) {
        var v = opts[k];
        if (v == null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'title') e.title = plain(v);
        else if (k === 'href') { if (typeof v === 'string' && v.charAt(0) === '#') e.setAttribute('href', v); }
        else if (k === 'data') { for (var d in v) e.dataset[d] = String(v[d]); }
        else if (k === 'style') { for (var p in v) e.style[p] = v[p]; }
        else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
        else if (ATTRS[k]) e.setAttribute(k, String(v));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }

  function add(parent, kid) {
    if (kid == null || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(parent, k); }); return; }
    if (kid instanceof Node) parent.appendChild(kid);
    else parent.appendChild(txt(kid));
  }

  function num(v, digits) {
    if (v == null || typeof v !== 'number' || !isFinite(v)) return '—';
    if (digits == null) digits = 3;
    if (Number.isInteger(v) && Math.abs(v) >= 10) return v.toLocaleString('en');
    return v.toFixed(digits);
  }
  function signed(v) { return v == null || !isFinite(v) ? '—' : (v > 0 ? '+' : '') + v.toFixed(3); }
  function pct(v) { return v == null || !isFinite(v) ? '—' : (100 * v).toFixed(1) + '%'; }
  function ints(v) { return v == null ? '—' : Number(v).toLocaleString('en'); }
  function chip(name, cls) { return h('span', { class: 'chip ' + (cls || name) }, name); }
  function kvTable(rows) {
    return h('table', { class: 'kv' }, rows.filter(Boolean).map(function (r) { return h('tr', null, h('th', null, r[0]), h('td', null, r[1])); }));
  }
  function grid(head, rows, numeric) {
    numeric = numeric || {};
    return h('table', { class: 'grid' },
      h('thead', null, h('tr', null, head.map(function (x, k) { return h('th', { class: numeric[k] ? 'num' : null }, x); }))),
      h('tbody', null, rows.map(function (r) {
        var tr = h('tr', { class: r.cls || null });
        (r.cells || r).forEach(function (x, k) { tr.appendChild(h('td', { class: numeric[k] ? 'num' : null }, x)); });
        return tr;
      })));
  }
  function counts(obj) {
    return Object.keys(obj || {}).map(function (k) { return k + ' ' + ints(obj[k]); }).join(', ') || '—';
  }

  // -- the data's derived arrays ------------------------------------------------------------------------------------

  function build() {
    var it = D.items, n = it.id.length;
    M = { n: n, score: new Float64Array(n), c: Int32Array.from(it.c), st: Int32Array.from(it.st), m: Int32Array.from(it.m),
          f: Int32Array.from(it.f), key: new Map(), idLower: null, textLower: null, crit: {}, b: null, dl: null, gates: [] };
    for (var i = 0; i < n; i++) {
      M.score[i] = it.s[i] == null ? NaN : it.s[i];
      M.key.set(it.c[i] + '\u0000' + it.id[i], i);
    }
    D.criteria.forEach(function (c, k) { M.crit[c.name] = k; });
    if (it.b) {
      M.b = new Float64Array(n); M.dl = new Float64Array(n);
      for (var j = 0; j < n; j++) { M.b[j] = it.b[j] == null ? NaN : it.b[j]; M.dl[j] = it.dl[j] == null ? NaN : it.dl[j]; }
    }
    if (D.gate) M.gates = D.gate.item_lists.map(function (g) { return new Set(g.items); });
    CHUNKS = {};
    S.sorted = null;
  }

  // -- each item's details: raw-deflate chunks, inflated when one of their items is opened or exported --------------

  var CHUNKS = {};
  function chunkLines(k) {
    var found = CHUNKS[k];
    if (found) return found;
    var bytes = Uint8Array.from(atob(D.items.details.chunks[k]), function (ch) { return ch.charCodeAt(0); });
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
    found = CHUNKS[k] = new Response(stream).text().then(function (text) { return text.split('\n'); });
    return found;
  }
  /** A Promise of item i's details (the row's fields beyond the table's columns). */
  function detailOf(i) {
    var size = D.items.details.chunk, k = Math.floor(i / size);
    return chunkLines(k).then(function (lines) { return JSON.parse(lines[i - k * size]); });
  }

  function crit(i) { return D.criteria[M.c[i]].name; }
  function anchor(i) { return '#item/' + encodeURIComponent(crit(i)) + '/' + encodeURIComponent(D.items.id[i]); }
  function flagNames(i) {
    var out = [], bits = M.f[i];
    D.flags.forEach(function (name, k) { if (bits & (1 << k)) out.push(name); });
    return out;
  }
  function used(column) {
    var seen = new Set();
    for (var i = 0; i < M.n; i++) seen.add(column[i]);
    return Array.from(seen).sort(function (a, b) { return D.strings[a] < D.strings[b] ? -1 : 1; });
  }

  // -- sorting and filtering ------------------------------------------------------------------------------------

  var COLS = [
    { key: 'id', label: 'id', cls: 'c-id', str: function (i) { return D.items.id[i]; } },
    { key: 'criterion', label: 'criterion', cls: 'c-criterion', str: crit },
    { key: 'score', label: 'score', cls: 'c-score', num: function (i) { return M.score[i]; } },
    { key: 'status', label: 'status', cls: 'c-status', str: function (i) { return D.strings[M.st[i]]; } },
    { key: 'method', label: 'method', cls: 'c-method', str: function (i) { return D.strings[M.m[i]]; } },
    { key: 'flags', label: 'flags', cls: 'c-flags', num: function (i) { return M.f[i]; }, chips: flagNames },
    { key: 'interval', label: 'interval', cls: 'c-interval',
      num: function (i) { var lo = D.items.lo[i], hi = D.items.hi[i]; return lo == null ? NaN : hi - lo; },
      text: function (i) { var lo = D.items.lo[i]; return lo == null ? '' : num(lo, 2) + '–' + num(D.items.hi[i], 2); } },
  ];
  var B_COLS = [
    { key: 'b', label: 'score B', cls: 'c-b', num: function (i) { return M.b[i]; } },
    { key: 'delta', label: 'Δ B−A', cls: 'c-delta', num: function (i) { return M.dl[i]; }, text: function (i) { return signed(M.dl[i]); } },
  ];

  function columns() { return M.b ? COLS.concat(B_COLS) : COLS; }
  function colByKey(cols, key) { for (var k = 0; k < cols.length; k++) if (cols[k].key === key) return cols[k]; return null; }

  /** The indices 0..n-1 sorted by a column (numbers: NaN last either way; text: code-unit order). */
  function sortBy(col, dir, base) {
    var idx = base ? Int32Array.from(base) : new Int32Array(M.n).map(function (_, i) { return i; });
    if (!col) return idx;
    if (col.num) {
      var vals = new Float64Array(M.n);
      for (var i = 0; i < idx.length; i++) vals[idx[i]] = col.num(idx[i]);
      idx.sort(function (a, b) {
        var x = vals[a], y = vals[b];
        if (x !== x) return y !== y ? a - b : 1;
        if (y !== y) return -1;
        return x === y ? a - b : (x < y ? -dir : dir);
      });
    } else {
      var strs = new Array(M.n);
      for (var j = 0; j < idx.length; j++) strs[idx[j]] = col.str(idx[j]);
      idx.sort(function (a, b) { var x = strs[a], y = strs[b]; return x === y ? a - b : (x < y ? -dir : dir); });
    }
    return idx;
  }

  function lowerTexts() {
    if (M.idLower) return;
    M.idLower = D.items.id.map(function (s) { return String(s).toLowerCase(); });
    M.textLower = D.texts.map(function (s) { return String(s).toLowerCase(); });
  }

  function applyFilter() {
    if (!S.sorted) S.sorted = sortBy(colByKey(columns(), S.sort.key), S.sort.dir);
    var f = S.f, q = f.q.trim().toLowerCase();
    var lo = f.min === '' ? -Infinity : Number(f.min), hi = f.max === '' ? Infinity : Number(f.max);
    var bit = 0, none = f.flag === 'none', anyFlag = f.flag === 'any';
    if (f.flag && !none && !anyFlag) bit = 1 << D.flags.indexOf(f.flag);
    var gate = f.gate >= 0 ? M.gates[f.gate] : null;
    var out = D.items.out;
    if (q) lowerTexts();
    var res = new Int32Array(M.n), k = 0, sorted = S.sorted;
    for (var v = 0; v < sorted.length; v++) {
      var i = sorted[v];
      if (f.c >= 0 && M.c[i] !== f.c) continue;
      if (f.st >= 0 && M.st[i] !== f.st) continue;
      if (f.m >= 0 && M.m[i] !== f.m) continue;
      if (bit && !(M.f[i] & bit)) continue;
      if (none && M.f[i]) continue;
      if (anyFlag && !M.f[i]) continue;
      if (gate && !gate.has(i)) continue;
      if (lo !== -Infinity || hi !== Infinity) { var s = M.score[i]; if (!(s >= lo && s <= hi)) continue; }
      if (q && M.idLower[i].indexOf(q) < 0 && (out[i] == null || M.textLower[out[i]].indexOf(q) < 0)) continue;
      res[k++] = i;
    }
    S.order = res.subarray(0, k);
  }

  // -- the virtual table --------------------------------------------------------------------------------------

  function vtable(cols, getOrder, sortState, onSort, href, cls) {
    var head = h('div', { class: 'vt-head', role: 'row' });
    var buttons = cols.map(function (col) {
      var b = h('button', { class: col.cls, type: 'button', data: { key: col.key }, onclick: function () { onSort(col.key); } }, col.label);
      head.appendChild(b);
      return b;
    });
    var spacer = h('div', { class: 'vt-spacer', role: 'rowgroup' });
    var body = h('div', { class: 'vt-body' }, spacer);
    var root = h('div', { class: 'vt' + (cls ? ' ' + cls : ''), role: 'table' }, head, body);
    var pool = [], pending = false;

    function cell(span, col, i) {
      if (col.chips) {
        var names = col.chips(i);
        span.replaceChildren.apply(span, names.map(function (n) { return chip(n); }));
        span.title = names.join(', ');
      } else {
        var value = col.text ? col.text(i) : col.num ? num(col.num(i)) : plain(col.str(i));
        span.textContent = value;
        span.title = value;
      }
    }

    function draw() {
      pending = false;
      var order = getOrder(), n = order.length;
      spacer.style.height = (n * ROW_H) + 'px';
      var top = body.scrollTop, height = body.clientHeight || 600;
      var first = Math.max(0, Math.floor(top / ROW_H) - 5), last = Math.min(n, Math.ceil((top + height) / ROW_H) + 5);
      var usedRows = 0;
      for (var v = first; v < last; v++) {
        var i = order[v], row = pool[usedRows];
        if (!row) {
          row = h('a', { class: 'vt-row', role: 'row' });
          cols.forEach(function (col) { row.appendChild(h('span', { class: col.cls, role: 'cell' })); });
          spacer.appendChild(row);
          pool.push(row);
        }
        row.style.top = (v * ROW_H) + 'px';
        row.style.display = '';
        row.setAttribute('href', href(i));
        row.dataset.index = String(i);
        row.classList.toggle('open', i === S.open);
        for (var k = 0; k < cols.length; k++) cell(row.children[k], cols[k], i);
        usedRows++;
      }
      for (var r = usedRows; r < pool.length; r++) pool[r].style.display = 'none';
      buttons.forEach(function (b, k) {
        var on = cols[k].key === sortState().key;
        if (on) b.setAttribute('aria-sort', sortState().dir > 0 ? 'ascending' : 'descending'); else b.removeAttribute('aria-sort');
      });
    }
    body.addEventListener('scroll', function () { if (!pending) { pending = true; requestAnimationFrame(draw); } });
    window.addEventListener('resize', function () { if (!pending) { pending = true; requestAnimationFrame(draw); } });
    return { root: root, draw: draw, body: body };
  }

  // -- histograms ---------------------------------------------------------------------------------------------------

  function histogram(data, cls, what) {
    if (!data) return h('p', { class: 'muted' }, 'no ' + what);
    var max = Math.max.apply(null, data.counts.concat([1]));
    var bars = h('div', { class: 'hist ' + cls, role: 'img', 'aria-label': 'histogram of ' + what });
    data.counts.forEach(function (count, k) {
      var label = data.discrete ? num(data.values[k], 2) : num(data.edges[k], 2) + '–' + num(data.edges[k + 1], 2);
      bars.appendChild(h('div', { class: 'col', title: label + ': ' + count, data: { count: count, bin: label } },
        h('div', { class: 'bar', style: { height: (100 * count / max) + '%' } })));
    });
    var axis = data.discrete
      ? h('div', { class: 'hist-axis' }, data.values.map(function (v) { return h('span', null, num(v, 2)); }))
      : h('div', { class: 'hist-axis' }, h('span', null, num(data.edges[0], 2)), h('span', null, num(data.edges[data.edges.length - 1], 2)));
    return h('div', { class: 'hist-wrap' }, bars, axis,
      h('div', { class: 'muted' }, 'n ' + ints(data.n) + ', mean ' + num(data.mean) + ', median ' + num(data.median) + ', max count ' + ints(max)));
  }

  // -- the run tab ------------------------------------------------------------------------------------------------

  function identityTable(identity) {
    var names = { provider: 'provider / model', 'served.model': 'model (as the responses name it)', 'served.model_sha256': 'model file sha256',
      'served.runtime': 'runtime', 'served.system_fingerprint': 'system fingerprint', sdk: 'judgesdk version', templates: 'templates',
      calibration: 'calibration', options: 'options hash' };
    return kvTable(Object.keys(names).filter(function (k) { return identity[k]; }).map(function (k) {
      return [names[k], h('span', { class: k.indexOf('sha') >= 0 || k === 'templates' ? 'mono' : null },
        Object.keys(identity[k]).map(function (v, j) { return [j ? h('br') : null, v, h('span', { class: 'muted' }, ' (' + ints(identity[k][v]) + ' rows)')]; }))];
    }));
  }

  function runView() {
    var r = D.run, u = r.usage;
    var cost = u.usd == null ? 'unknown' : '$' + u.usd.toFixed(4);
    var cards = [
      ['items', ints(r.items)], ['rows', ints(r.rows)], ['criteria', ints(Object.keys(r.criteria).length)],
      ['input tokens', ints(u.input_tokens)], ['output tokens', ints(u.output_tokens)], ['calls', ints(u.calls)],
      ['cost', cost], ['judge time (sum)', num(u.latency_sum_s, 1) + ' s'], ['mean latency', num(u.latency_mean_s, 2) + ' s'],
      ['from cache', ints(u.cached_rows) + ' rows'],
    ];
    var page = h('section', { class: 'page', id: 'run-view' },
      h('h2', null, 'Run'),
      h('p', { class: 'mono' }, r.files.join(', ')),
      D.notes.length ? h('ul', { class: 'notes' }, D.notes.map(function (n) { return h('li', null, n); })) : null,
      h('div', { class: 'cards', id: 'run-header' }, cards.map(function (c) { return h('div', { class: 'card' }, h('div', { class: 'k' }, c[0]), h('div', { class: 'v' }, c[1])); })),
      h('h3', null, 'Judge'), identityTable(r.identity),
      kvTable([['methods', counts(r.methods)], ['statuses', counts(r.statuses)], ['criteria', counts(r.criteria)],
        ['lines read', ints(r.lines) + (r.skipped ? ' (' + ints(r.skipped) + ' unreadable, skipped)' : '')],
        u.cost_notes.length ? ['cost notes', u.cost_notes.join('; ')] : null,
        u.cached_input_tokens ? ['cached input tokens', ints(u.cached_input_tokens)] : null]),
      u.groups.length > 1 ? grid(['provider', 'model', 'input tokens', 'output tokens', 'calls', 'cost', 'price'],
        u.groups.map(function (g) { return [g.provider, g.model, ints(g.input_tokens), ints(g.output_tokens), ints(g.calls), g.usd == null ? 'unknown' : '$' + g.usd.toFixed(4), g.price]; }),
        { 2: 1, 3: 1, 4: 1 }) : null,
      D.gate ? h('p', null, 'Gate: ', chip(D.gate.status), ' ', h('a', { href: '#gate' }, 'see the gate report')) : null,
      D.compare ? h('p', null, 'Compared with ', h('span', { class: 'mono' }, D.compare.new), ': ' + ints(D.compare.n_changed) + ' items moved; ', h('a', { href: '#compare' }, 'see the comparison')) : null,
      h('h2', null, 'Per criterion'),
      h('div', { class: 'crits' }, D.criteria.map(function (c, k) {
        var jury = c.jury ? h('p', null, 'Jury agreement (Krippendorff\'s α, interval): ',
          h('b', { class: 'alpha' }, c.jury.alpha == null ? 'undefined' : num(c.jury.alpha)), ' over ' + ints(c.jury.items) + ' items, judges ' + c.jury.judges.join(', ') + (c.jury.reason ? ' (' + c.jury.reason + ')' : '')) : null;
        return h('div', { class: 'crit', data: { criterion: c.name } },
          h('h3', null, c.name || '(no criterion)', h('span', { class: 'muted' }, ' ' + ints(c.scored) + ' of ' + ints(c.n) + ' scored')),
          h('div', { class: 'muted' }, 'scores'), histogram(c.scores, 'scores', 'scores'),
          h('div', { class: 'muted' }, 'interval widths'), histogram(c.widths, 'widths', 'interval widths (no row carries an interval)'),
          jury,
          h('p', null, h('a', { href: '#items', onclick: function () { setFilter({ c: k }); } }, 'show its items')));
      })));
    return page;
  }

  // -- the items tab ---------------------------------------------------------------------------------------------

  function option(value, label, selected) { var o = h('option', { value: value }, label); if (selected) o.selected = true; return o; }

  function setFilter(changes) {
    for (var k in changes) S.f[k] = changes[k];
    if (V.items) { syncFilterInputs(); refreshItems(); }
  }

  function syncFilterInputs() {
    var c = V.items.controls;
    c.c.value = String(S.f.c); c.st.value = String(S.f.st); c.m.value = String(S.f.m); c.flag.value = S.f.flag;
    c.q.value = S.f.q; c.min.value = S.f.min; c.max.value = S.f.max; if (c.gate) c.gate.value = String(S.f.gate);
  }

  function itemsView() {
    var controls = {};
    function sel(name, label, opts) {
      var s = h('select', { 'aria-label': label, onchange: function () { S.f[name] = name === 'flag' ? s.value : Number(s.value); refreshItems(); } }, opts);
      controls[name] = s;
      return h('label', null, label, s);
    }
    var timer = null;
    var q = h('input', { type: 'search', placeholder: 'search ids and outputs', 'aria-label': 'search',
      oninput: function () { clearTimeout(timer); timer = setTimeout(function () { S.f.q = q.value; refreshItems(); }, 150); } });
    controls.q = q;
    function bound(name, label) {
      var e = h('input', { type: 'number', step: 'any', 'aria-label': label, oninput: function () { S.f[name] = e.value; refreshItems(); } });
      controls[name] = e;
      return h('label', null, label, e);
    }
    var bar = h('div', { class: 'filters' },
      sel('c', 'criterion', [option('-1', 'all')].concat(D.criteria.map(function (c, k) { return option(String(k), plain(c.name) || '(none)'); }))),
      sel('st', 'status', [option('-1', 'all')].concat(used(M.st).map(function (s) { return option(String(s), D.strings[s]); }))),
      sel('m', 'method', [option('-1', 'all')].concat(used(M.m).map(function (s) { return option(String(s), plain(D.strings[s])); }))),
      sel('flag', 'flag', [option('', 'any or none'), option('any', 'any flag'), option('none', 'no flag')].concat(D.flags.map(function (f) { return option(f, f); }))),
      D.gate ? sel('gate', 'failed gate', [option('-1', 'any or none')].concat(D.gate.gates.map(function (g, k) { return option(String(k), plain(g.name)); }))) : null,
      bound('min', 'score ≥'), bound('max', 'score ≤'), q,
      h('button', { class: 'act', type: 'button', onclick: function () { exportRows('csv'); } }, 'Export CSV'),
      h('button', { class: 'act', type: 'button', onclick: function () { exportRows('jsonl'); } }, 'Export JSONL'),
      h('span', { class: 'count', id: 'item-count', role: 'status' }));
    var table = vtable(columns(), function () { return S.order; }, function () { return S.sort; }, function (key) {
      if (S.sort.key === key) S.sort.dir = -S.sort.dir; else { S.sort.key = key; S.sort.dir = key === 'score' || key === 'flags' || key === 'delta' ? -1 : 1; }
      S.sorted = null;
      refreshItems();
    }, anchor, M.b ? 'with-b' : null);
    var detail = h('div', { class: 'detail', id: 'item-detail', 'aria-live': 'polite' });
    var root = h('div', { class: 'items', id: 'items-view', style: { display: 'flex', flexDirection: 'column', flex: '1', minHeight: '0' } },
      bar, h('div', { class: 'split' }, table.root, detail));
    V.items = { root: root, table: table, detail: detail, controls: controls, count: bar.querySelector('#item-count') };
    syncFilterInputs();
    applyFilter();
    return root;
  }

  function refreshItems() {
    applyFilter();
    V.items.count.textContent = ints(S.order.length) + ' of ' + ints(M.n) + ' items';
    V.items.count.dataset.shown = String(S.order.length);
    V.items.table.body.scrollTop = Math.min(V.items.table.body.scrollTop, Math.max(0, S.order.length * ROW_H - 1));
    V.items.table.draw();
  }

  // -- one item ------------------------------------------------------------------------------------------------

  function textBlock(label, index, cls) {
    if (index == null) return null;
    return [h('h3', null, label), h('div', { class: 'text ' + cls, data: { field: cls } }, txt(D.texts[index]))];
  }

  function distribution(dist) {
    if (!dist || !dist.probs) return null;
    var probs = dist.probs, labels = Array.isArray(probs) ? probs.map(function (_, k) { return String(k); }) : Object.keys(probs);
    var values = labels.map(function (l, k) { return Array.isArray(probs) ? probs[k] : probs[l]; });
    var best = values.indexOf(Math.max.apply(null, values));
    return [
      h('h3', null, 'Label distribution'),
      h('div', { class: 'dist', id: 'dist-bars', role: 'list' }, labels.map(function (label, k) {
        var p = values[k];
        return h('div', { class: 'dist-row' + (k === best ? ' mode' : ''), role: 'listitem', data: { label: label, p: p } },
          h('span', { class: 'lab iso' }, plain(label)),
          h('div', { class: 'track' }, h('div', { class: 'fill', style: { width: Math.max(0, Math.min(1, p)) * 100 + '%' } })),
          h('span', { class: 'val' }, num(p)));
      })),
      kvTable([['method', dist.method], ['expected', num(dist.expected)], ['mode', dist.mode], ['entropy (nats)', num(dist.entropy)],
        ['coverage (mass on the labels)', num(dist.coverage)], dist.low_coverage ? ['low coverage', 'yes'] : null,
        dist.n_samples != null ? ['samples', ints(dist.n_samples) + (dist.n_unparsed ? ' (' + ints(dist.n_unparsed) + ' unparsed)' : '')] : null,
        dist.stderr != null ? ['standard error', num(dist.stderr)] : null]),
    ];
  }

  function intervalView(i, details) {
    var lo = D.items.lo[i], hi = D.items.hi[i];
    if (lo == null) return null;
    var axis = D.criteria[M.c[i]].axis || [lo, hi], a = axis[0], b = axis[1], span = b - a || 1;
    var s = M.score[i];
    function at(v) { return (100 * (v - a) / span) + '%'; }
    var level = details.interval_level != null ? Math.round(details.interval_level * 100) + '% ' : '';
    return [
      h('h3', null, 'Interval'),
      h('p', { id: 'interval', data: { low: lo, high: hi } }, level + 'interval ' + num(lo) + ' – ' + num(hi) + ' (width ' + num(hi - lo) + ')'),
      h('div', { class: 'axis' },
        h('div', { class: 'range', style: { left: at(lo), width: (100 * (hi - lo) / span) + '%' } }),
        isFinite(s) ? h('div', { class: 'point', title: 'score ' + num(s), style: { left: at(s) } }) : null,
        h('span', { class: 'end', style: { left: '0' } }, num(a, 2)), h('span', { class: 'end', style: { right: '0' } }, num(b, 2))),
    ];
  }

  function signalsView(details) {
    var sig = details.signals, con = details.contributions;
    if (!sig && !con) return null;
    var names = Object.keys(Object.assign({}, sig || {}, con || {}));
    var maxAbs = Math.max.apply(null, names.map(function (n) { return Math.abs((con || {})[n] || 0); }).concat([1e-9]));
    names.sort(function (x, y) { return Math.abs((con || {})[y] || 0) - Math.abs((con || {})[x] || 0); });
    return [
      h('h3', null, 'Signals and their contributions'),
      grid(['signal', 'value', 'contribution', ''], names.map(function (n) {
        var c = (con || {})[n], w = c == null ? 0 : 50 * Math.abs(c) / maxAbs;
        return [h('span', { class: 'mono' }, n), num((sig || {})[n]), signed(c),
          h('div', { class: 'contrib' }, h('div', { class: 'track' }, h('div', { class: c < 0 ? 'neg' : 'pos', style: { width: w + '%' } })))];
      }), { 1: 1, 2: 1 }),
      kvTable([details.outside_fitted_range && details.outside_fitted_range.length ? ['outside the fitted range', details.outside_fitted_range.join(', ')] : null,
        details.extrapolation != null ? ['extrapolation would move the score by', signed(details.extrapolation)] : null,
        details.calibration ? ['calibration', h('span', { class: 'mono' }, details.calibration)] : null]),
    ];
  }

  function juryView(i, d) {
    var details = d.details || {};
    if (!details.scores && !d.parts) return null;
    var parts = d.parts || {}, scores = details.scores || {};
    var names = Object.keys(Object.assign({}, scores, parts));
    var c = D.criteria[M.c[i]];
    return [
      h('h3', null, 'Jury'),
      grid(['judge', 'score', 'status', 'method', 'model'], names.map(function (n) {
        var p = parts[n] || {};
        return [n, num(scores[n] != null ? scores[n] : p.score), p.status || '', p.method || '', [p.provider, p.model].filter(Boolean).join('/')];
      }), { 1: 1 }),
      kvTable([['aggregate', details.aggregate], ['spread', num(details.spread)], ['threshold', num(details.threshold)],
        ['flagged for disagreement', details.flagged ? 'yes' : 'no'], ['judges that scored', ints(details.judges_ok) + ' of ' + ints(details.judges)],
        c.jury ? ['Krippendorff\'s α over the run', c.jury.alpha == null ? 'undefined (' + c.jury.reason + ')' : num(c.jury.alpha) + ' over ' + ints(c.jury.items) + ' items'] : null]),
    ];
  }

  function provenanceView(d) {
    var blocks = [];
    if (d.provenance_ref != null) blocks.push(['', D.provenance[d.provenance_ref]]);
    Object.keys(d.parts || {}).forEach(function (n) { var p = d.parts[n]; if (p && p.provenance_ref != null) blocks.push([n + ': ', D.provenance[p.provenance_ref]]); });
    if (!blocks.length) return [h('h3', null, 'Provenance'), h('p', { class: 'muted' }, 'not recorded (a row written before provenance existed)')];
    return [h('h3', null, 'Provenance'), blocks.map(function (b) {
      var p = b[1], rows = [];
      ['sdk', 'provider', 'model', 'method', 'options', 'calibration'].forEach(function (k) { if (p[k]) rows.push([b[0] + k, h('span', { class: 'mono' }, p[k])]); });
      Object.keys(p.served || {}).forEach(function (k) { rows.push([b[0] + 'served.' + k, h('span', { class: 'mono' }, p.served[k])]); });
      if (p.templates && p.templates.length) rows.push([b[0] + 'templates', h('span', { class: 'mono' }, p.templates.join(', '))]);
      return kvTable(rows);
    })];
  }

  function compareView(i) {
    if (!M.b) return null;
    var causes = D.items.ch[i], bst = D.items.bst[i];
    return [
      h('h3', null, 'Second run'),
      kvTable([['score A → B', num(M.score[i]) + ' → ' + num(M.b[i])], ['Δ B−A', signed(M.dl[i])],
        ['status A → B', D.strings[M.st[i]] + ' → ' + (bst == null ? 'not in B' : D.strings[bst])]]),
      causes ? grid(['what changed in the judge', 'A', 'B'], Object.keys(causes).map(function (k) { return [h('span', { class: 'mono' }, k), causes[k][0] || '—', causes[k][1] || '—']; }))
        : (D.items.ch && (M.f[i] & (1 << D.flags.indexOf('changed'))) ? h('p', { class: 'muted' }, 'moved with the same judge record: unexplained') : null),
    ];
  }

  function rowObject(i, d) {
    var row = { id: D.items.id[i], criterion: crit(i), score: isFinite(M.score[i]) ? M.score[i] : null,
      status: D.strings[M.st[i]], method: D.strings[M.m[i]] };
    for (var k in d) {
      if (k === 'provenance_ref' || k === 'method_reason_ref' || k === 'review' || k === 'gates' || k === 'unread') continue;
      row[k] = d[k];
    }
    if (d.method_reason_ref != null) row.method_reason = D.strings[d.method_reason_ref];
    if (d.provenance_ref != null) row.provenance = D.provenance[d.provenance_ref];
    if (d.parts) {
      row.parts = {};
      Object.keys(d.parts).forEach(function (n) {
        var p = Object.assign({}, d.parts[n]);
        if (p.provenance_ref != null) { p.provenance = D.provenance[p.provenance_ref]; delete p.provenance_ref; }
        row.parts[n] = p;
      });
    }
    return row;
  }

  function detailView(i, d) {
    var details = d.details || {};
    var reason = d.method_reason_ref != null ? D.strings[d.method_reason_ref] : '';
    var usage = d.usage || {};
    var gates = (d.gates || []).map(function (g) { return D.gate.gates[g]; });
    return h('div', { data: { index: i, id: D.items.id[i], loaded: d.loading ? '' : '1' } },
      h('h2', { class: 'iso' }, txt(D.items.id[i])),
      h('p', null, h('a', { href: anchor(i), class: 'permalink', title: 'this item\'s own address' }, 'link to this item'),
        ' · criterion ', h('b', { class: 'iso' }, txt(crit(i))), ' · score ', h('b', { id: 'detail-score' }, num(M.score[i])),
        ' · ', chip(D.strings[M.st[i]]), ' · ', h('span', { class: 'mono' }, txt(D.strings[M.m[i]])), ' ', flagNames(i).map(function (f) { return chip(f); })),
      reason ? h('p', { class: 'muted' }, txt(reason)) : null,
      d.unread ? h('p', { class: 'notes' }, d.unread) : null,
      d.error ? [h('h3', null, 'Error'), h('div', { class: 'text' }, txt(d.error))] : null,
      d.review && d.review.needs_review ? h('p', null, 'Needs review: ' + d.review.reasons.join(', ') + ' (risk ' + num(d.review.risk) + ')') : null,
      gates.length ? [h('h3', null, 'Failed gates naming this item'), h('ul', null, gates.map(function (g) { return h('li', null, h('b', null, txt(g.name)), ': ', txt(g.message)); }))] : null,
      compareView(i),
      textBlock('Output', D.items.out[i], 'output'),
      textBlock('Source', D.items.src[i], 'source'),
      textBlock('Reference', D.items.ref[i], 'reference'),
      textBlock('Context', D.items.ctx[i], 'context'),
      distribution(d.distribution),
      intervalView(i, details),
      signalsView(details),
      juryView(i, d),
      d.notes && d.notes.length ? [h('h3', null, 'Notes'), h('ul', { class: 'item-notes' }, d.notes.map(function (n) { return h('li', null, txt(n)); }))] : null,
      d.rationale ? [h('h3', null, 'Rationale'), h('div', { class: 'text' }, txt(d.rationale))] : null,
      d.loading ? null : [h('h3', null, 'Usage'),
        kvTable([['tokens in / out', ints(usage.input_tokens) + ' / ' + ints(usage.output_tokens)], ['calls', ints(usage.calls)],
          ['latency', num(d.latency_s, 3) + ' s'], ['from the cache', d.cached ? 'yes' : 'no']]),
        provenanceView(d)],
      d.raw && d.raw.length ? h('details', null, h('summary', null, 'The model\'s raw answers (' + d.raw.length + ')'),
        d.raw.map(function (r) { return h('div', { class: 'text' }, txt(r)); })) : null,
      d.loading ? h('p', { class: 'muted' }, 'reading the item\'s details…')
        : h('details', null, h('summary', null, 'The whole row (JSON)'), h('pre', { class: 'json' }, txt(JSON.stringify(rowObject(i, d), null, 2)))));
  }

  function showDetail() {
    var pane = V.items.detail, open = S.open;
    if (open >= 0) {
      pane.replaceChildren(detailView(open, { loading: true }));  // the columns at once, the rest when inflated
      detailOf(open).then(function (d) { if (S.open === open && V.items && V.items.detail === pane) pane.replaceChildren(detailView(open, d)); });
    }
    else if (S.missing) pane.replaceChildren(h('p', { class: 'empty' }, 'No item ', h('span', { class: 'mono' }, plain(S.missing)), ' in this run.'));
    else pane.replaceChildren(h('p', { class: 'empty' }, 'Choose an item in the table to see its texts, distribution, interval, signals and provenance.'));
    V.items.table.draw();
  }

  // -- export --------------------------------------------------------------------------------------------------

  var PLAIN_NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

  function csvCell(v) {
    var s = v == null ? '' : String(v);
    // a spreadsheet would run a cell that starts so as a formula (OWASP: =, +, -, @, tab, CR), "-2+3+cmd|..." included:
    // prefix a quote; only a cell that is a plain number, and nothing more, stays as it is
    if (/^[=+\-@\t\r\n]/.test(s) && !PLAIN_NUMBER.test(s)) s = "'" + s;
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  function exportRows(kind) {
    var order = S.order, lines = [];
    if (kind === 'csv') {
      var head = ['id', 'criterion', 'score', 'status', 'method', 'flags', 'interval_low', 'interval_high'].concat(M.b ? ['score_b', 'delta'] : []);
      lines.push(head.join(','));
      for (var v = 0; v < order.length; v++) {
        var i = order[v];
        var cells = [D.items.id[i], crit(i), isFinite(M.score[i]) ? M.score[i] : '', D.strings[M.st[i]], D.strings[M.m[i]], flagNames(i).join(' '),
          D.items.lo[i], D.items.hi[i]].concat(M.b ? [isFinite(M.b[i]) ? M.b[i] : '', isFinite(M.dl[i]) ? M.dl[i] : ''] : []);
        lines.push(cells.map(csvCell).join(','));
      }
      download(lines, kind, 'text/csv');
    } else {
      var rows = Array.from(order);
      Promise.all(rows.map(detailOf)).then(function (details) {
        download(rows.map(function (i, k) { return JSON.stringify(rowObject(i, details[k])); }), kind, 'application/x-ndjson');
      });
    }
  }

  function download(lines, kind, type) {
    var blob = new Blob([lines.length ? lines.join('\n') + '\n' : ''], { type: type });
    var link = document.createElement('a');
    link.href = URL.createObjectURL(blob);
    link.download = 'judgesdk-view-rows.' + kind;
    document.body.appendChild(link);
    link.click();
    setTimeout(function () { URL.revokeObjectURL(link.href); link.remove(); }, 0);
  }

  // -- the compare tab --------------------------------------------------------------------------------------------

  function compareTab() {
    var c = D.compare, a = D.run.identity, b = c.header.identity;
    var fields = Object.keys(Object.assign({}, a, b));
    var changed = Int32Array.from(c.changed);
    var ccols = [
      { key: 'id', label: 'id', cls: 'c-id', str: function (i) { return D.items.id[i]; } },
      { key: 'criterion', label: 'criterion', cls: 'c-criterion', str: crit },
      { key: 'score', label: 'A', cls: 'c-score', num: function (i) { return M.score[i]; } },
      { key: 'b', label: 'B', cls: 'c-b', num: function (i) { return M.b[i]; } },
      { key: 'absdelta', label: 'Δ B−A', cls: 'c-delta', num: function (i) { return isFinite(M.dl[i]) ? -Math.abs(M.dl[i]) : NaN; }, text: function (i) { return signed(M.dl[i]); } },
      { key: 'status', label: 'status A → B', cls: 'c-status', str: function (i) { var s = D.items.bst[i]; return D.strings[M.st[i]] + ' → ' + (s == null ? '—' : D.strings[s]); } },
      { key: 'causes', label: 'what changed in the judge', cls: 'c-causes', str: function (i) { var ch = D.items.ch[i]; return ch ? Object.keys(ch).join(', ') : 'unexplained'; } },
    ];
    function reorder() { S.corder = sortBy(colByKey(ccols, S.csort.key), S.csort.dir, changed); }
    reorder();
    var table = vtable(ccols, function () { return S.corder; }, function () { return S.csort; }, function (key) {
      if (S.csort.key === key) S.csort.dir = -S.csort.dir; else { S.csort.key = key; S.csort.dir = 1; }
      reorder(); table.draw();
    }, anchor, 'compare');
    var shift = c.shift;
    var page = h('section', { class: 'page', id: 'compare-view', style: { maxWidth: 'none' } },
      h('h2', null, 'Two runs: A ', h('span', { class: 'mono' }, c.old), ' and B ', h('span', { class: 'mono' }, c.new)),
      h('div', { class: 'cards', id: 'compare-summary' }, [
        ['items in both', ints(c.paired)], ['only in A', ints(c.only_old)], ['only in B', ints(c.only_new)],
        ['moved beyond ' + c.tolerance + ' or changed status', ints(c.n_changed)], ['judged by a different judge record', ints(c.provenance_changed)],
        ['moved, same judge record (unexplained)', ints(c.unexplained)],
        ['mean shift B−A', signed(shift.mean)], ['median shift', signed(shift.median)], ['p (' + shift.test + ')', shift.p_value == null ? 'n/a' : shift.p_value < 1e-4 ? '< 0.0001' : shift.p_value.toPrecision(3)],
      ].map(function (x) { return h('div', { class: 'card' }, h('div', { class: 'k' }, x[0]), h('div', { class: 'v' }, x[1])); })),
      h('div', { class: 'crits' },
        h('div', null, h('h3', null, 'What changed in the judge, over the moved items'),
          Object.keys(c.causes).length ? grid(['field', 'moved items'], Object.keys(c.causes).map(function (k) { return [h('span', { class: 'mono' }, k), ints(c.causes[k])]; }), { 1: 1 })
            : h('p', { class: 'muted' }, 'nothing: every moved item has the same judge record in both runs')),
        h('div', null, h('h3', null, 'The judge in each run'),
          grid(['', 'A', 'B'], fields.map(function (k) {
            var x = Object.keys(a[k] || {}).join(', '), y = Object.keys(b[k] || {}).join(', ');
            return { cls: x !== y ? 'fail' : null, cells: [k, h('span', { class: 'mono' }, x || '—'), h('span', { class: 'mono' }, y || '—')] };
          }))),
        h('div', null, h('h3', null, 'Deltas B−A over the items scored in both'), histogram(c.deltas, 'deltas', 'deltas'))),
      h('h3', null, 'Moved items (' + ints(c.n_changed) + ')'),
      h('div', { class: 'moved' }, table.root));
    V.compare = { root: page, table: table };
    return page;
  }

  // -- the card and gate tabs -------------------------------------------------------------------------------------

  function cardTab() {
    var card = D.card, j = card.judge, data = card.data;
    return h('section', { class: 'page', id: 'card-view' },
      h('h2', null, 'Judge card: ', txt(card.title)),
      kvTable([['method asked', j.method], ['methods in the rows', counts(j.methods_in_rows)], ['provider / model', j.providers.join(', ') || '—'],
        ['model identity', h('span', { class: 'mono' }, (j.model_identity || 'not recorded') + (j.identity_source ? ' (' + j.identity_source + ')' : ''))],
        ['judgesdk version', j.sdk_version || '—'], ['labelled set', data.human_file + ': ' + data.subset + ' (' + ints(data.n_items) + ' items)']]),
      card.criteria.map(function (c) {
        var ceil = {};
        (c.ceiling.levels || []).forEach(function (l) { ceil[l.level + '/' + l.method] = l; });
        return h('div', { class: 'card-criterion', data: { criterion: c.criterion } },
          h('h3', null, c.criterion, h('span', { class: 'muted' }, ' — ' + ints(c.n_items) + ' items joined to human scores')),
          grid(['level', 'method', 'judge vs humans', 'CI', 'items', 'groups', 'human ceiling', 'judge on the ceiling\'s items'],
            c.agreement.map(function (lv) {
              var cor = lv.correlation, ci = lv.ci, cl = ceil[cor.level + '/' + cor.method];
              return [cor.level, cor.method, num(cor.value), ci ? '[' + num(ci.low) + ', ' + num(ci.high) + ']' : '—', ints(cor.n_items), ints(cor.n_groups),
                cl ? num(cl.value) : '—', cl ? num(cl.judge) : '—'];
            }), { 2: 1, 4: 1, 5: 1, 6: 1, 7: 1 }),
          h('p', { class: 'muted' }, c.ceiling.available ? 'Human ceiling: each of ' + c.ceiling.n_annotators + ' annotators against the mean of the others; rests on ' + c.ceiling.rests_on + '.'
            : 'Human ceiling not available: ' + c.ceiling.reason + '.'),
          h('p', { class: 'muted' }, ints(c.parse.n_scored) + ' of ' + ints(c.parse.n_selected) + ' selected items scored (' + pct(c.parse.share_scored) + '); statuses ' + counts(c.parse.status) + '.'),
          c.meta_eval_command ? h('p', { class: 'mono' }, c.meta_eval_command) : null);
      }));
  }

  function gateTab() {
    var g = D.gate;
    return h('section', { class: 'page', id: 'gate-view' },
      h('h2', null, 'Gate: ', chip(g.status), ' exit code ' + g.exit_code),
      g.source ? h('p', { class: 'mono' }, g.source) : null,
      grid(['result', 'gate', 'kind', 'criterion', 'observed', 'threshold', 'message', 'items'], g.gates.map(function (x, k) {
        var items = g.item_lists[k].items;
        return { cls: x.outcome !== 'pass' ? 'fail' : null, cells: [chip(x.outcome), x.name, x.kind, x.criterion || '', num(x.observed), x.op + ' ' + num(x.threshold), x.message,
          items.length ? h('a', { href: '#items', class: 'gate-items', data: { gate: k }, onclick: function () { setFilter({ gate: k }); } }, 'show ' + ints(items.length) + ' items') : ''] };
      }), { 4: 1 }),
      g.notes && g.notes.length ? h('ul', { class: 'notes' }, g.notes.map(function (n) { return h('li', null, n); })) : null);
  }

  // -- routing ---------------------------------------------------------------------------------------------------

  function tabs() {
    var list = [['run', 'Run'], ['items', 'Items']];
    if (D.compare) list.push(['compare', 'Compare']);
    if (D.card) list.push(['card', 'Card']);
    if (D.gate) list.push(['gate', 'Gate']);
    return list;
  }

  function frame() {
    var app = document.getElementById('app');
    V.nav = h('nav', { class: 'tabs' }, tabs().map(function (t) { return h('a', { href: '#' + t[0], data: { tab: t[0] } }, t[1]); }));
    V.live = h('span', { class: 'live', id: 'live' }, D.live ? 'live: refreshing as rows are appended' : '');
    V.main = h('main', { id: 'main' });
    app.replaceChildren(h('header', { class: 'top' }, h('h1', { title: D.title }, plain(D.title)), V.nav, V.live), V.main);
  }

  function views(tab) {
    if (!V[tab + 'Root']) {
      V[tab + 'Root'] = tab === 'run' ? runView() : tab === 'items' ? itemsView() : tab === 'compare' ? compareTab() : tab === 'card' ? cardTab() : gateTab();
    }
    return V[tab + 'Root'];
  }

  function route() {
    var hash = location.hash.slice(1);
    S.missing = null;
    if (hash.indexOf('item/') === 0) {
      var rest = hash.slice(5), cut = rest.indexOf('/'), name = '', id = '';
      try { name = decodeURIComponent(rest.slice(0, cut)); id = decodeURIComponent(rest.slice(cut + 1)); } catch (e) { name = ''; id = rest; }
      var k = M.crit[name], i = cut >= 0 && k != null ? M.key.get(k + '\u0000' + id) : undefined;
      S.tab = 'items';
      S.open = i == null ? -1 : i;
      if (i == null) S.missing = id;
    } else {
      var names = tabs().map(function (t) { return t[0]; });
      S.tab = names.indexOf(hash) >= 0 ? hash : 'run';
    }
    show();
  }

  function show() {
    var root = views(S.tab);
    if (V.main.firstChild !== root) V.main.replaceChildren(root);
    V.main.className = S.tab === 'items' ? 'items-view' : '';
    Array.prototype.forEach.call(V.nav.children, function (a) { a.classList.toggle('on', a.dataset.tab === S.tab); });
    if (S.tab === 'items') {
      refreshItems();
      showDetail();
      if (S.open >= 0) scrollToOpen();
    }
    if (S.tab === 'compare') V.compare.table.draw();
  }

  function scrollToOpen() {
    var pos = Array.prototype.indexOf.call(S.order, S.open);
    if (pos < 0) return;
    var body = V.items.table.body, top = pos * ROW_H;
    if (top < body.scrollTop || top > body.scrollTop + body.clientHeight - ROW_H) { body.scrollTop = Math.max(0, top - body.clientHeight / 2); V.items.table.draw(); }
  }

  // -- a run in progress (--serve) --------------------------------------------------------------------------------

  function poll() {
    fetch('data.json', { cache: 'no-store', headers: { 'If-None-Match': '"' + (D.version || '') + '"' } }).then(function (r) {
      if (r.status !== 200) return null;
      return r.json();
    }).then(function (fresh) {
      var when = new Date().toLocaleTimeString();
      if (!fresh) { V.live.textContent = 'live: checked ' + when; return; }
      var open = S.open >= 0 ? [crit(S.open), D.items.id[S.open]] : null;
      var scroll = V.items ? V.items.table.body.scrollTop : 0;
      D = fresh;
      build();
      ['run', 'items', 'compare', 'card', 'gate'].forEach(function (t) { V[t + 'Root'] = null; });
      V.items = null; V.compare = null;
      frame();
      if (open) { var k = M.crit[open[0]]; var i = k == null ? undefined : M.key.get(k + '\u0000' + open[1]); S.open = i == null ? -1 : i; }
      show();
      if (V.items && S.tab === 'items') { V.items.table.body.scrollTop = scroll; V.items.table.draw(); }
      V.live.textContent = 'live: ' + ints(M.n) + ' rows, updated ' + when;
      document.documentElement.dataset.rows = String(M.n);
    }).catch(function () { V.live.textContent = 'live: the server stopped answering'; });
  }

  // -- start -----------------------------------------------------------------------------------------------------

  build();
  frame();
  window.addEventListener('hashchange', route);
  route();
  document.documentElement.dataset.rows = String(M.n);
  document.documentElement.dataset.ready = '1';
  window.judgesdkView = { ready: true, readyAt: performance.now(), rows: M.n };
  if (D.live) setInterval(poll, 1000);
})();
