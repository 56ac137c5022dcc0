/* app.js: the goodput dashboard. Views by URL hash: #/ fleet, #/job/ID, #/device/UUID,
 * #/workflows (per workflow kind from OTLP spans, GET /api/v1/workflows).
 * Data from /api/v1/ (docs/api.md); charts with uPlot (vendored). Refreshes every 5 s while
 * "live" is ticked and the tab is visible. A pipeline job's view adds its stages, bottleneck,
 * queue-length chart, sizing and a what-if form (GET /api/v1/jobs/ID/pipeline). A bearer token given once as ?token=... is kept
 * in sessionStorage and sent on every API call. */
(function () {
  'use strict';
  var BUCKETS = ['productive', 'not_ready', 'startup', 'data_wait', 'checkpoint', 'wasted_progress',
    'recovery', 'idle_allocated', 'other'];
  var COLORS = { productive: '#16a34a', not_ready: '#7c3aed', startup: '#2563eb', data_wait: '#f59e0b',
    checkpoint: '#0d9488', wasted_progress: '#dc2626', recovery: '#db2777', idle_allocated: '#9ca3af',
    other: '#a16207' };
  var SIGNALS = [['gpu_util', '#2563eb'], ['sm_active', '#16a34a'], ['tensor_active', '#7c3aed'],
    ['dram_active', '#f59e0b'], ['mem_used_ratio', '#6b7280']];
  var view = document.getElementById('view');
  var statusEl = document.getElementById('status');
  var liveEl = document.getElementById('live');
  var plots = [];
  var timer = null;

  var m = /[?&]token=([^&#]+)/.exec(location.search);
  if (m) {
    sessionStorage.setItem('goodput_token', decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.hash);
  }

  function api(path) {
    var h = {};
    var tok = sessionStorage.getItem('goodput_token');
    if (tok) h.Authorization = 'Bearer ' + tok;
    return fetch('api/v1/' + path, { headers: h }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j.error || ('HTTP ' + r.status));
        return j;
      });
    });
  }
  function esc(s) {
    return String(s === null || s === undefined ? '' : s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function pct(v) { return v === null || v === undefined ? '–' : (100 * v).toFixed(1) + '%'; }
  function num(v, d) { return v === null || v === undefined ? '–' : Number(v).toFixed(d === undefined ? 2 : d); }
  function money(v) { return v === null || v === undefined ? '–' : '$' + Number(v).toFixed(2); }
  function when(s) { return s ? new Date(s * 1000).toLocaleString() : '–'; }
  function dur(s) {
    if (s === null || s === undefined) return '–';
    if (s < 120) return s.toFixed(0) + ' s';
    if (s < 7200) return (s / 60).toFixed(1) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }
  function jobLink(id) { return '<a href="#/job/' + encodeURIComponent(id) + '">' + esc(id) + '</a>'; }
  function devLink(u, label) { return '<a href="#/device/' + encodeURIComponent(u) + '">' + esc(label || u) + '</a>'; }

  function badputBar(byBucket, total) {
    if (!byBucket || !total) return '<div class="bar"></div>';
    return '<div class="bar">' + BUCKETS.map(function (b) {
      var v = byBucket[b] || 0;
      if (v <= 0) return '';
      return '<span title="' + b + ' ' + (100 * v / total).toFixed(1) + '%" style="width:' +
        (100 * v / total) + '%;background:' + COLORS[b] + '"></span>';
    }).join('') + '</div>';
  }
  function legend() {
    return '<div class="legend">' + BUCKETS.map(function (b) {
      return '<span><i style="background:' + COLORS[b] + '"></i>' + b + '</span>';
    }).join('') + '</div>';
  }
  function findingHtml(f) {
    var ev = (f.evidence || []).map(function (e) {
      return '<tr><td>' + esc(e.metric) + '</td><td class="num">' + num(e.value, 3) + '</td><td>' + esc(e.op) +
        '</td><td class="num">' + num(e.threshold, 3) + '</td><td class="muted">' + esc(e.source) + '</td></tr>';
    }).join('');
    // badput explained and headroom from productive time: shown apart, never summed
    var gpuH = function (v) { return v !== null && v !== undefined ? num(v / 3600, 2) + ' GPU-h' : '– GPU-h'; };
    var bad = 'badput ' + gpuH(f.badput_gpu_s ? f.badput_gpu_s.total : null) + ' · headroom ' + gpuH(f.headroom_gpu_s);
    return '<div class="finding"><span class="cls">' + esc(f['class']) + '</span> <span class="muted">' +
      esc(f.scope) + ' ' + (f.scope === 'job' ? jobLink(f.scope_id) : esc(f.scope_id)) + ' · ' + bad +
      (f.confidence !== undefined ? ' · confidence ' + num(f.confidence, 2) : '') + '</span><div>' +
      esc(f.summary) + '</div>' +
      (f.counterfactual ? '<div class="muted">Counterfactual: ' + esc(f.counterfactual) + '</div>' : '') + (ev ? '<table><tr><th>evidence</th><th class="num">value</th><th></th><th class="num">threshold</th><th>source</th></tr>' + ev + '</table>' : '') +
      '<div class="fix"><b>Fix:</b> ' + esc(f.recommendation) + '</div></div>';
  }

  function clearPlots() {
    plots.forEach(function (p) { p.destroy(); });
    plots = [];
  }
  function chart(el, title, xs, series, opts) {
    var width = Math.max(300, el.clientWidth - 16);
    var data = [xs];
    var ser = [{}];
    var axes = [{}, { scale: 'ratio', values: function (u, v) { return v.map(function (x) { return (x * 100).toFixed(0) + '%'; }); } }];
    series.forEach(function (s) {
      data.push(s.values);
      ser.push({ label: s.label, stroke: s.color, width: 1.5, scale: s.scale || 'ratio', spanGaps: false,
        value: function (u, v) { return v === null || v === undefined ? '–' : (s.scale === 'ratio' || !s.scale ? (v * 100).toFixed(1) + '%' : v.toFixed(2)); } });
    });
    if (opts && opts.right) axes.push({ scale: opts.right, side: 1, grid: { show: false }, label: opts.rightLabel });
    var scales = { x: { time: true }, ratio: { auto: false, range: [0, 1] } };
    if (opts && opts.right) scales[opts.right] = { auto: true, range: function (u, mn, mx) { return [0, mx > 0 ? mx * 1.1 : 1]; } };
    var p = new uPlot({ title: title, width: width, height: 260, series: ser, axes: axes, scales: scales,
      cursor: { sync: { key: 'gp' } } }, data, el);
    plots.push(p);
    return p;
  }

  function fleetView() {
    return Promise.all([api('fleet'), api('jobs'), api('devices')]).then(function (r) {
      var f = r[0], jobs = r[1].jobs, devs = r[2].devices;
      var h = '<h1>Fleet</h1><div class="cards">' +
        card('Goodput', pct(f.goodput)) + card('Allocated', num(f.allocated_gpu_h, 1) + ' GPU-h') +
        card('Wasted', num(f.wasted_gpu_h, 1) + ' GPU-h') + card('Cost / hour', money(f.cost_per_h)) +
        card('Wasted cost / hour', money(f.wasted_cost_per_h)) +
        card('Jobs', f.jobs_running + ' running · ' + f.jobs_not_ready + ' not ready') +
        card('GPUs held', f.gpus_held) + '</div>';
      h += '<h2>Where allocated GPU time went</h2>' + legend() + badputBar(f.gpu_s_by_bucket, sum(f.gpu_s_by_bucket));
      h += '<h2>Jobs</h2><table id="jobs"><tr><th>job</th><th>name</th><th>user</th><th>kind</th><th>state</th>' +
        '<th class="num">GPUs</th><th class="num">GPU-h</th><th class="num">goodput</th><th>badput</th><th class="num">cost</th></tr>' +
        jobs.map(function (j) {
          return '<tr><td>' + jobLink(j.id) + '</td><td>' + esc(j.name) + '</td><td>' + esc(j.user) + '</td><td>' +
            esc(j.kind) + '</td><td>' + esc(j.state) + '</td><td class="num">' + j.gpus + '</td><td class="num">' +
            num(j.allocated_gpu_h) + '</td><td class="num">' + pct(j.goodput) + '</td><td>' +
            badputBar(j.gpu_s_by_bucket, j.allocated_gpu_s) + '</td><td class="num">' + money(j.cost_usd) + '</td></tr>';
        }).join('') + '</table>';
      h += '<h2>Top findings</h2>' + ((f.top_findings || []).map(findingHtml).join('') || '<p class="muted">No findings yet (run <code>goodput diagnose</code>).</p>');
      h += '<h2>Devices</h2><table id="devices"><tr><th>GPU</th><th>model</th><th class="num">util</th><th class="num">memory</th>' +
        '<th class="num">power</th><th>jobs now</th></tr>' + devs.map(function (d) {
          var l = d.latest || {};
          return '<tr><td>' + devLink(d.uuid, d.index + ' · ' + d.uuid) + '</td><td>' + esc(d.model || d.name) + '</td><td class="num">' +
            pct(l.gpu_util) + '</td><td class="num">' + pct(l.mem_used_ratio) + '</td><td class="num">' + num(l.power_w, 0) +
            ' W</td><td>' + d.jobs_now.map(jobLink).join(', ') + '</td></tr>';
        }).join('') + '</table>';
      view.innerHTML = h;
    });
  }
  function card(k, v) { return '<div class="card"><div class="k">' + esc(k) + '</div><div class="v">' + esc(v) + '</div></div>'; }
  function sum(o) { var s = 0; for (var k in o) s += o[k]; return s; }

  function timeline(j) {
    var L = j.lifecycle, t0 = L.submitted_s || L.allocated_s, t1 = L.ended_s || (j.span && j.span.to_s);
    if (!t0 || !t1 || t1 <= t0) return '';
    function x(t) { return (100 * (t - t0) / (t1 - t0)).toFixed(2) + '%'; }
    var segs = '';
    if (L.submitted_s && L.allocated_s) segs += '<span style="left:0;width:' + x(L.allocated_s) + ';background:#e5e7eb" title="queued"></span>';
    if (L.allocated_s) {
      var r = L.ready_s || t1;
      segs += '<span style="left:' + x(L.allocated_s) + ';width:calc(' + x(r) + ' - ' + x(L.allocated_s) + ');background:' + COLORS.not_ready + '" title="allocated, not ready"></span>';
    }
    if (L.ready_s) segs += '<span style="left:' + x(L.ready_s) + ';width:calc(100% - ' + x(L.ready_s) + ');background:' + COLORS.productive + '" title="progressing"></span>';
    var marks = [['submitted', L.submitted_s], ['allocated', L.allocated_s], ['ready', L.ready_s], ['ended', L.ended_s]]
      .filter(function (p) { return p[1]; }).map(function (p, i) {
        // One row per mark, so marks close in time never overlap.
        return '<b style="left:' + x(p[1]) + ';top:' + (30 + 14 * i) + 'px">▲ ' + p[0] + ' ' + new Date(p[1] * 1000).toLocaleTimeString() + '</b>';
      }).join('');
    return '<div class="timeline" id="timeline">' + segs + marks + '</div><div style="height:42px"></div>';
  }

  function jobView(id) {
    return Promise.all([api('jobs/' + encodeURIComponent(id) + '?windows=12'), api('jobs/' + encodeURIComponent(id) + '/series?points=400'),
      api('findings?job=' + encodeURIComponent(id)).catch(function () { return null; })]).then(function (r) {
      var j = r[0], s = r[1], lv = r[2];
      var h = '<h1>Job ' + esc(j.id) + ' <span class="muted">' + esc(j.name) + ' · ' + esc(j.user) + ' · ' + esc(j.kind) + ' · ' + esc(j.state) + '</span></h1>';
      h += '<div class="cards">' + card('Goodput', pct(j.goodput)) + card('GPUs', j.gpus) + card('Allocated', num(j.allocated_gpu_h) + ' GPU-h') +
        card('Queue wait', dur(j.queue_wait_s)) + card('Time to ready', dur(j.time_to_ready_s)) +
        card('Mean GPU util', pct(j.mean_gpu_util)) + card('Energy', num(j.energy_kwh) + ' kWh') + card('Cost', money(j.cost_usd)) + '</div>';
      h += '<h2>Lifecycle: allocated → ready → progress</h2>' + timeline(j);
      var pl = (j.pipelines || [])[0]; // a pipeline job: its stages come first
      if (pl) h += pipelineHtml(pl);
      h += '<h2>GPU signals and progress (' + esc(s.progress.unit) + '/s), one time axis</h2><div class="chart" id="c-signals"></div>';
      h += '<div class="grid2"><div><h2>Badput breakdown</h2>' + legend() + badputBar(j.gpu_s_by_bucket, j.allocated_gpu_s) +
        '<table id="buckets"><tr><th>bucket</th><th class="num">GPU-h</th><th class="num">share</th></tr>' +
        BUCKETS.map(function (b) {
          var v = (j.gpu_s_by_bucket || {})[b] || 0;
          return '<tr><td><i style="display:inline-block;width:10px;height:10px;background:' + COLORS[b] + '"></i> ' + b +
            '</td><td class="num">' + num(v / 3600) + '</td><td class="num">' + pct(j.allocated_gpu_s ? v / j.allocated_gpu_s : null) + '</td></tr>';
        }).join('') + '</table></div><div><h2>Goodput over time</h2><div class="chart" id="c-windows"></div></div></div>';
      // the agent's live pass over the job's last window (docs/findings.md), apart from the stored findings
      if (lv && lv.live) h += '<h2 id="live-findings">Live findings <span class="muted">last ' + dur(lv.live.window_s) + ', as of ' +
        new Date(lv.live.as_of_ns / 1e6).toLocaleTimeString() + '</span></h2>' +
        ((lv.live_findings || []).map(findingHtml).join('') || '<p class="muted">No live findings for this job.</p>');
      h += '<h2>Findings</h2>' + ((j.findings || []).map(findingHtml).join('') || '<p class="muted">No findings for this job.</p>');
      h += '<h2>GPUs</h2><ul>' + j.allocations.map(function (a) {
        return '<li>' + devLink(a.uuid) + ' <span class="muted">' + when(a.from_s) + ' → ' + (a.to_s ? when(a.to_s) : 'now') + '</span></li>';
      }).join('') + '</ul>';
      view.innerHTML = h;
      var series = SIGNALS.map(function (p) { return { label: p[0], color: p[1], values: s.signals[p[0]] }; });
      series.push({ label: s.progress.unit + '/s', color: '#111827', scale: 'rate', values: s.progress.rate_per_s });
      chart(document.getElementById('c-signals'), '', s.t, series, { right: 'rate', rightLabel: s.progress.unit + '/s' });
      var w = j.windows || [];
      if (w.length) {
        chart(document.getElementById('c-windows'), '', w.map(function (x) { return x.from_s; }),
          [{ label: 'goodput', color: COLORS.productive, values: w.map(function (x) { return x.goodput; }) },
           { label: 'gpu_util', color: '#2563eb', values: w.map(function (x) { return x.mean_gpu_util; }) }]);
      }
      if (pl) { queueChart(pl); bindWhatIf(pl); }
    });
  }

  // ---- pipelines (issue 9): stage table, bottleneck, queue chart, sizing, what-if ----
  var STAGE_COLORS = ['#2563eb', '#dc2626', '#16a34a', '#7c3aed', '#f59e0b', '#0d9488', '#db2777', '#6b7280'];
  var whatIf = {}; // job id -> {spec, queue, html}: survives the live refresh
  function ms(v) { return v === null || v === undefined ? '–' : (1000 * v).toFixed(1); }
  function pipelineHtml(pl) {
    var bn = pl.bottleneck, sz = pl.sizing || {};
    var h = '<h2 id="pipeline">Pipeline: ' + pl.stages.length + ' stages, the slowest owns the run</h2><div class="cards">' +
      card('End to end', num(pl.throughput_per_s) + ' items/s') + card('Per hour', num(pl.throughput_per_h, 0) + ' items') +
      card('Items done', pl.items_done) + card('Bottleneck', bn || '–') + card('GPU busy', pct(pl.gpu_busy_share)) +
      card('Items per USD', pl.items_per_usd === null ? '–' : num(pl.items_per_usd, 0)) + '</div>';
    h += '<table id="pipe-stages"><tr><th>stage</th><th>resource</th><th class="num">workers</th><th class="num">items/s</th>' +
      '<th>utilization</th><th class="num">starved s</th><th class="num">blocked s</th><th class="num">service p50 ms</th>' +
      '<th class="num">service p99 ms</th><th class="num">queue avg / max</th><th class="num">capacity items/s</th></tr>' +
      pl.stages.map(function (st) {
        var isBn = st.name === bn;
        return '<tr' + (isBn ? ' class="bn"' : '') + '><td>' + esc(st.name) + (isBn ? ' <span class="tag">bottleneck</span>' : '') +
          '</td><td>' + esc(st.resource) + '</td><td class="num">' + st.workers + '</td><td class="num">' + num(st.throughput_per_s) +
          '</td><td><div class="ubar" title="' + pct(st.utilization) + '"><span style="width:' + (100 * Math.min(1, st.utilization || 0)).toFixed(1) +
          '%"></span></div> ' + pct(st.utilization) + '</td><td class="num">' + num(st.starved_s, 1) + '</td><td class="num">' +
          num(st.blocked_s, 1) + '</td><td class="num">' + ms(st.service_s.p50) + '</td><td class="num">' + ms(st.service_s.p99) +
          '</td><td class="num">' + num(st.queue_mean, 1) + ' / ' + num(st.queue_max, 0) + '</td><td class="num">' +
          num(st.capacity_per_s) + '</td></tr>';
      }).join('') + '</table>';
    var gpu = pl.stages.filter(function (st) { return st.resource === 'gpu'; }).map(function (st) {
      return 'GPU stage <b>' + esc(st.name) + '</b> is busy ' + pct(st.utilization) + '; of its idle time ' +
        pct(st.idle_starved_share) + ' is starvation (empty input queue), ' + pct(st.idle_blocked_share) + ' backpressure.';
    }).join('<br>');
    if (gpu) h += '<p>' + gpu + '</p>';
    h += '<div class="grid2"><div><h2>Input queue length over time</h2><div class="chart" id="c-queues"></div></div><div>';
    h += '<h2>Bottleneck and sizing</h2>' + (pl.finding ? findingHtml(pl.finding) : '<p class="muted">No stage clearly limits the run.</p>');
    if (sz.workers) {
      h += '<p id="pipe-sizing">' + (sz.scale_first ? 'Scale <b>' + esc(sz.scale_first) + '</b> first, to ' + sz.scale_first_to + ' workers. ' : '') +
        'Balanced pools for ' + sz.cpu_budget + ' CPU / ' + sz.gpu_budget + ' GPU workers: <code>' +
        pl.stages.map(function (st) { return esc(st.name) + '=' + sz.workers[st.name]; }).join(',') + '</code> → ' +
        num(sz.rate_per_s) + ' items/s' + (sz.limited_by ? ' (limited by ' + esc(sz.limited_by) + ')' : '') + '.</p>';
    }
    var saved = whatIf[pl.job] || {};
    h += '<h2>What if?</h2><form id="whatif" class="whatif">' + pl.stages.map(function (st) {
      var v = saved.pools ? saved.pools[st.name] : (sz.workers ? sz.workers[st.name] : st.workers);
      return '<label>' + esc(st.name) + ' <input type="number" min="1" max="4096" step="1" name="' + esc(st.name) + '" value="' + esc(v) + '"></label>';
    }).join('') + '<label>queue bound <input type="number" min="0" step="1" name="__queue" placeholder="as run" value="' + esc(saved.queue || '') +
      '"></label><button type="submit">Predict</button></form><div id="whatif-out">' + (saved.html || '') + '</div>';
    return h + '</div></div>';
  }
  function queueChart(pl) {
    var el = document.getElementById('c-queues');
    if (!el || !pl.stages.length) return;
    var n = pl.stages[0].queue_series.length, t0 = pl.t0_ns / 1e9, dt = pl.window_s / n, xs = [];
    for (var i = 0; i < n; i++) xs.push(t0 + (i + 0.5) * dt);
    var data = [xs], ser = [{}];
    pl.stages.forEach(function (st, k) {
      data.push(st.queue_series);
      ser.push({ label: st.name, stroke: STAGE_COLORS[k % STAGE_COLORS.length], width: st.name === pl.bottleneck ? 2.5 : 1.5,
        value: function (u, v) { return v === null || v === undefined ? '–' : v.toFixed(1); } });
    });
    plots.push(new uPlot({ width: Math.max(300, el.clientWidth - 16), height: 240, series: ser,
      scales: { x: { time: true }, y: { range: function (u, mn, mx) { return [0, mx > 0 ? mx * 1.1 : 1]; } } },
      axes: [{}, { label: 'items waiting' }] }, data, el));
  }
  function whatIfResult(pl, r) {
    var w = r.what_if, b = w.baseline, d = pl.throughput_per_s > 0 ? w.throughput_per_s / pl.throughput_per_s - 1 : null;
    return '<table id="whatif-table"><tr><th></th><th class="num">items/s</th><th class="num">items/h</th><th class="num">GPU busy</th></tr>' +
      '<tr><td>measured</td><td class="num">' + num(pl.throughput_per_s) + '</td><td class="num">' + num(pl.throughput_per_h, 0) +
      '</td><td class="num">' + pct(pl.gpu_busy_share) + '</td></tr><tr><td>measured pools, simulated</td><td class="num">' +
      num(b.throughput_per_s) + '</td><td class="num">' + num(b.throughput_per_h, 0) + '</td><td class="num">' + pct(b.gpu_busy_share) +
      '</td></tr><tr class="pred"><td><b>predicted</b> <code>' + esc(w.spec || 'as run') + '</code></td><td class="num" id="whatif-rate">' +
      num(w.throughput_per_s) + '</td><td class="num">' + num(w.throughput_per_h, 0) + '</td><td class="num" id="whatif-gpu">' +
      pct(w.gpu_busy_share) + '</td></tr></table><p class="muted">' + w.items + ' items simulated in ' + num(1000 * r.sim_elapsed_s, 1) +
      ' ms' + (d === null ? '' : '; ' + (d >= 0 ? '+' : '') + (100 * d).toFixed(0) + '% vs measured') + '.</p>';
  }
  function bindWhatIf(pl) {
    var form = document.getElementById('whatif'), out = document.getElementById('whatif-out');
    if (!form) return;
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var pools = {}, spec = [], queue = '';
      Array.prototype.forEach.call(form.querySelectorAll('input'), function (inp) {
        if (inp.name === '__queue') { queue = inp.value.trim(); return; }
        pools[inp.name] = inp.value;
        spec.push(inp.name + '=' + inp.value);
      });
      out.innerHTML = '<p class="muted">Simulating…</p>';
      var q = 'what_if=' + encodeURIComponent(spec.join(',')) + (queue ? '&queue=' + encodeURIComponent(queue) : '');
      api('jobs/' + encodeURIComponent(pl.job) + '/pipeline?' + q).then(function (r) {
        var html = whatIfResult(pl, r);
        whatIf[pl.job] = { pools: pools, queue: queue, html: html };
        out.innerHTML = html;
      }).catch(function (e) {
        whatIf[pl.job] = { pools: pools, queue: queue, html: '' };
        out.innerHTML = '<p class="err">' + esc(e.message || e) + '</p>';
      });
    });
  }

  function deviceView(uuid) {
    var u = encodeURIComponent(uuid);
    return Promise.all([api('devices/' + u), api('devices/' + u + '/series?points=400')]).then(function (r) {
      var d = r[0], s = r[1], l = d.latest || {};
      var h = '<h1>GPU ' + esc(d.index) + ' <span class="muted">' + esc(d.uuid) + ' · ' + esc(d.name) + ' · ' + esc(d.host) + '</span></h1>';
      h += '<div class="cards">' + card('Util now', pct(l.gpu_util)) + card('SM active', pct(l.sm_active)) + card('Memory used', pct(l.mem_used_ratio)) +
        card('Power', num(l.power_w, 0) + ' W') + card('Temperature', num(l.temp_c, 0) + ' °C') + '</div>';
      h += '<h2>Signals and power</h2><div class="chart" id="c-device"></div>';
      h += '<h2>Jobs on this GPU</h2><table id="dev-jobs"><tr><th>job</th><th>from</th><th>to</th></tr>' + d.allocations.map(function (a) {
        return '<tr><td>' + jobLink(a.job_id) + '</td><td>' + when(a.from_s) + '</td><td>' + (a.to_s ? when(a.to_s) : 'now') + '</td></tr>';
      }).join('') + '</table>';
      view.innerHTML = h;
      var series = SIGNALS.map(function (p) { return { label: p[0], color: p[1], values: s.signals[p[0]] }; });
      series.push({ label: 'power W', color: '#dc2626', scale: 'watts', values: s.signals.power_w });
      chart(document.getElementById('c-device'), '', s.t, series, { right: 'watts', rightLabel: 'W' });
    });
  }

  // ---- workflows (issue 25): per kind from OTLP spans, GET /api/v1/workflows ----
  var STEPS = ['model', 'tool', 'retrieval', 'other', 'queue'];
  var STEP_COLORS = { model: '#2563eb', tool: '#f59e0b', retrieval: '#7c3aed', other: '#a16207', queue: '#9ca3af' };
  function stepBar(t) {
    var tot = 0;
    STEPS.forEach(function (k) { tot += t[k] || 0; });
    if (!(tot > 0)) return '<div class="bar"></div>';
    return '<div class="bar">' + STEPS.map(function (k) {
      var v = t[k] || 0;
      return v > 0 ? '<span data-step="' + k + '" style="width:' + (100 * v / tot).toFixed(2) + '%;background:' + STEP_COLORS[k] +
        '" title="' + k + ' ' + num(v, 2) + ' s"></span>' : '';
    }).join('') + '</div>';
  }
  // One workflow's spans as a waterfall: a row per span, bars placed on the workflow's own time.
  function waterfall(w, id) {
    if (!w || !w.spans || !w.spans.length) return '';
    var e2e = w.e2e_s > 0 ? w.e2e_s : 1;
    return '<div class="wfall" id="' + id + '">' + w.spans.map(function (sp) {
      var l = Math.max(0, 100 * sp.start_s / e2e), wd = Math.max(0.3, 100 * (sp.end_s - sp.start_s) / e2e);
      if (l + wd > 100) wd = Math.max(0.3, 100 - l);
      return '<div class="wrow"><span class="wname">' + esc(sp.name) + '</span><span class="wtrack"><span style="left:' +
        l.toFixed(2) + '%;width:' + wd.toFixed(2) + '%;background:' + (STEP_COLORS[sp.step] || '#6b7280') +
        (sp.ok === false ? ';outline:2px solid var(--bad)' : '') + '" title="' + esc(sp.step) + ' ' + num(sp.end_s - sp.start_s, 3) +
        ' s"></span></span></div>';
    }).join('') + '</div>';
  }
  function workflowsView() {
    return api('workflows').then(function (d) {
      var kinds = d.kinds || [], ing = d.ingest || {};
      var n = 0;
      kinds.forEach(function (k) { n += k.count; });
      var h = '<h1>Workflows</h1><p class="muted">From OpenTelemetry spans sent to <code>POST /v1/traces</code>, last ' +
        dur(d.window_s) + '; GPU figures ' + (d.gpu_known ? 'joined to the engines that served the model calls' : 'unknown (no engine joined)') + '.</p>' +
        '<div class="cards">' + card('Workflows', n) + card('Kinds', kinds.length) + card('Spans accepted', ing.spans_accepted) +
        card('Spans dropped', (ing.spans_rejected || 0) + (ing.spans_dropped_queue_full || 0) + (ing.spans_dropped_out_of_memory || 0)) + '</div>';
      if (!kinds.length) {
        view.innerHTML = h + '<p class="muted">No workflows yet: point an OpenTelemetry exporter at this agent\'s /v1/traces.</p>';
        return;
      }
      h += '<h2>Per kind (root span name)</h2><div class="legend">' + STEPS.map(function (k) {
        return '<span><i style="background:' + STEP_COLORS[k] + '"></i>' + k + '</span>';
      }).join('') + '</div><table id="wf-kinds"><tr><th>kind</th><th class="num">count</th><th class="num">success</th>' +
        '<th class="num">p50</th><th class="num">p95</th><th>time by step</th><th class="num">GPU-s / ok</th>' +
        '<th class="num">$ / ok</th><th class="num">J / ok</th><th class="num">tokens</th><th>critical path</th></tr>' +
        kinds.map(function (k) {
          return '<tr data-kind="' + esc(k.kind) + '"><td>' + esc(k.kind) + '</td><td class="num">' + k.count + '</td><td class="num">' +
            pct(k.success_rate) + '</td><td class="num">' + num(k.e2e_p50_s, 3) + ' s</td><td class="num">' + num(k.e2e_p95_s, 3) +
            ' s</td><td>' + stepBar(k.time_by_step_s || {}) + '</td><td class="num">' + num(k.gpu_s_per_ok, 3) + '</td><td class="num">' +
            (k.usd_per_ok === null || k.usd_per_ok === undefined ? '–' : '$' + Number(k.usd_per_ok).toFixed(5)) + '</td><td class="num">' +
            num(k.j_per_ok, 1) + '</td><td class="num">' + esc(k.tokens === null ? '–' : k.tokens) + '</td><td class="muted">' +
            esc(k.critical_path) + '</td></tr>';
        }).join('') + '</table>';
      h += '<h2>A typical (p50) and a slow (p95) workflow per kind</h2><div class="grid2">' + kinds.map(function (k, i) {
        return '<div class="chart"><b>' + esc(k.kind) + '</b> <span class="muted">typical ' + num(k.typical && k.typical.e2e_s, 3) +
          ' s</span>' + waterfall(k.typical, 'wf-typ-' + i) + '<span class="muted">slow ' + num(k.slow && k.slow.e2e_s, 3) + ' s</span>' +
          waterfall(k.slow, 'wf-slow-' + i) + '</div>';
      }).join('') + '</div>';
      var eng = d.engines || [];
      if (eng.length) {
        h += '<h2>Engines: idle GPU-seconds between calls</h2><table id="wf-engines"><tr><th>engine</th><th class="num">calls</th>' +
          '<th class="num">busy GPU-s</th><th class="num">on tools</th><th class="num">on retrieval</th><th class="num">on the client</th>' +
          '<th class="num">no work</th></tr>' + eng.map(function (e) {
            var i = e.idle_gpu_s || {};
            return '<tr><td>' + jobLink(e.job_id) + '</td><td class="num">' + e.calls + '</td><td class="num">' + num(e.busy_gpu_s, 1) +
              '</td><td class="num">' + num(i.waiting_on_tools, 1) + '</td><td class="num">' + num(i.waiting_on_retrieval, 1) +
              '</td><td class="num">' + num(i.waiting_on_client, 1) + '</td><td class="num">' + num(i.no_work, 1) + '</td></tr>';
          }).join('') + '</table>';
      }
      h += '<h2>Findings</h2><div id="wf-findings">' + ((d.findings || []).map(findingHtml).join('') ||
        '<p class="muted">None.</p>') + '</div>';
      view.innerHTML = h;
    });
  }

  var rendering = false;
  function render() {
    if (rendering) return;
    rendering = true;
    var hash = location.hash || '#/';
    var p;
    var sy = window.scrollY;
    if (hash.indexOf('#/job/') === 0) p = jobView(decodeURIComponent(hash.slice(6)));
    else if (hash.indexOf('#/device/') === 0) p = deviceView(decodeURIComponent(hash.slice(9)));
    else if (hash.indexOf('#/workflows') === 0) p = workflowsView();
    else p = fleetView();
    clearPlots();
    p.then(function () {
      statusEl.textContent = 'updated ' + new Date().toLocaleTimeString();
      statusEl.className = 'muted';
      window.scrollTo(0, sy);
    }).catch(function (e) {
      statusEl.textContent = String(e.message || e);
      statusEl.className = 'err';
      view.innerHTML = '<p class="err">' + esc(e.message || e) + '</p>';
    }).then(function () {
      rendering = false;
      document.body.setAttribute('data-rendered', location.hash || '#/');
    });
  }
  function schedule() {
    if (timer) clearInterval(timer);
    timer = setInterval(function () {
      // Not while the user is typing in a form (the what-if inputs would be rebuilt).
      var a = document.activeElement;
      if (liveEl.checked && !document.hidden && !(a && a.tagName === 'INPUT' && a.form)) render();
    }, 5000);
  }
  window.addEventListener('hashchange', function () { window.scrollTo(0, 0); render(); });
  var rt = null;
  window.addEventListener('resize', function () { clearTimeout(rt); rt = setTimeout(render, 200); });
  render();
  schedule();
})();
