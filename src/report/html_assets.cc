// The script and style `cleave report` inlines into its page (html_report.h): the script reads the
// page's JSON (#cleave-data) and draws every chart, so the page needs nothing from the network.
#include "report/html_report.h"

namespace cleave::report {

std::string_view report_style() {
  return R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 18px 0 4px; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; margin: 14px 0 4px; }
h4 { font-size: 13px; margin: 8px 0 2px; font-weight: 600; }
.muted { color: #666; }
.plans { display: grid; gap: 24px; overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; }
td, th { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: #b00020; font-weight: 600; }
.good { color: #1b6e20; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
.memory-row { display: flex; flex-wrap: wrap; gap: 8px; }
.memory-chart { border: 1px solid #ddd; background: #fcfcfc; }
canvas.timeline { border: 1px solid #ddd; display: block; }
.violation { border-left: 3px solid #b00020; padding: 4px 10px; margin: 8px 0; background: #fff6f6; }
.bar { display: inline-block; height: 10px; background: #4e79a7; }
#tooltip { position: fixed; pointer-events: none; background: #222; color: #fff; font-size: 12px;
           padding: 3px 6px; border-radius: 3px; display: none; z-index: 10; }
input.filter { margin: 4px 0; width: 260px; }
)css";
}

std::string_view report_script() {
  return R"js(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('cleave-data').textContent);
  const root = document.getElementById('report');
  const SVG = 'http://www.w3.org/2000/svg';
  const ROLE_COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#9c755f'];
  const LANES = ['compute', 'transfers in', 'collectives', 'host copies'];
  const LANE_COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#59a14f'];
  const tooltip = el('div', { id: 'tooltip' });
  document.body.appendChild(tooltip);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c);
    return e;
  }
  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }
  function bytes(b) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = Math.abs(b), u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (b < 0 ? '-' : '') + (u ? v.toPrecision(4) : v) + ' ' + units[u];
  }
  function secs(s) {
    if (s === 0) return '0 s';
    if (s >= 1) return s.toFixed(3) + ' s';
    if (s >= 1e-3) return (s * 1e3).toFixed(3) + ' ms';
    return (s * 1e6).toFixed(1) + ' us';
  }
  function table(head, rows, numeric) {
    const t = el('table');
    t.append(el('tr', {}, ...head.map((h, i) => el('th', numeric[i] ? { class: 'num' } : {}, h))));
    for (const r of rows)
      t.append(el('tr', {}, ...r.map((c, i) => el('td', numeric[i] ? { class: 'num' } : {}, c))));
    return t;
  }
  function showTip(ev, text) {
    tooltip.textContent = text;
    tooltip.style.display = 'block';
    tooltip.style.left = (ev.clientX + 12) + 'px';
    tooltip.style.top = (ev.clientY + 12) + 'px';
  }
  function hideTip() { tooltip.style.display = 'none'; }

  // One row per device and lane that has events; time runs left to right over the step.
  function drawTimeline(canvas, tl, devices) {
    const used = new Set(tl.events.map(e => e[1]));
    const rows = [];
    devices.forEach((d, i) => LANES.forEach((lane, l) => { if (used.has(l)) rows.push([i, l]); }));
    const rowOf = new Map(rows.map((r, i) => [r[0] * 4 + r[1], i]));
    const rowH = 12, label = 150, axis = 18, width = 1000;
    const height = rows.length * rowH + axis;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio; canvas.height = height * ratio;
    canvas.style.width = width + 'px'; canvas.style.height = height + 'px';
    const g = canvas.getContext('2d');
    g.scale(ratio, ratio);
    g.font = '10px sans-serif';
    const endUs = Math.max(tl.end_s * 1e6, 1e-9);
    const x = us => label + (width - label - 8) * us / endUs;
    rows.forEach(([d, l], i) => {
      g.fillStyle = i % 2 ? '#fafafa' : '#f0f0f0';
      g.fillRect(label, i * rowH, width - label, rowH);
      g.fillStyle = '#333';
      g.fillText(devices[d].name + ' ' + LANES[l], 2, i * rowH + 9);
    });
    const byRow = rows.map(() => []);
    for (const e of tl.events) {
      const r = rowOf.get(e[0] * 4 + e[1]);
      byRow[r].push(e);
      g.fillStyle = LANE_COLORS[e[1]];
      g.fillRect(x(e[2]), r * rowH + 1, Math.max(x(e[2] + e[3]) - x(e[2]), 0.5), rowH - 2);
    }
    g.fillStyle = '#333';
    for (let k = 0; k <= 5; k++) {
      const us = endUs * k / 5;
      g.fillRect(x(us), rows.length * rowH, 1, 4);
      g.fillText(secs(us * 1e-6), Math.min(x(us), width - 50), rows.length * rowH + 14);
    }
    canvas.dataset.events = tl.events.length;
    canvas.dataset.rows = rows.length;
    canvas.addEventListener('mousemove', ev => {
      const box = canvas.getBoundingClientRect();
      const r = Math.floor((ev.clientY - box.top) / rowH);
      const us = (ev.clientX - box.left - label) / (width - label - 8) * endUs;
      const hit = r >= 0 && r < rows.length && byRow[r].find(e => e[2] <= us && us <= e[2] + e[3]);
      if (hit) showTip(ev, tl.names[hit[4]] + ': ' + secs(hit[2] * 1e-6) + ' + ' + secs(hit[3] * 1e-6));
      else hideTip();
    });
    canvas.addEventListener('mouseleave', hideTip);
  }

  // Bytes held per role, stacked, as a step function over the step; capacity and peak marked.
  // A measured series has one "role", the arena's total.
  function drawMemory(svg, series, dev, stepS, colors = ROLE_COLORS, names = data.roles) {
    const W = 460, H = 170, left = 56, right = 8, top = 16, bottom = 20;
    svg.setAttribute('width', W); svg.setAttribute('height', H);
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const cap = dev.memory_capacity_bytes, peak = dev.peak_memory_bytes;
    const yMax = Math.max(cap, peak, 1) * 1.08;
    const endS = Math.max(stepS, series.t.length ? series.t[series.t.length - 1] : 0, 1e-12);
    const x = s => left + (W - left - right) * s / endS;
    const y = b => top + (H - top - bottom) * (1 - b / yMax);
    const n = series.t.length;
    const below = new Array(n).fill(0);
    let drawn = 0;
    series.roles.forEach((values, r) => {
      if (!values.some(v => v > 0)) return;
      const above = values.map((v, i) => below[i] + v);
      let d = '';
      for (let i = 0; i < n; i++) {
        const t1 = i + 1 < n ? series.t[i + 1] : endS;
        d += (i ? 'L' : 'M') + x(series.t[i]) + ',' + y(above[i]) + 'L' + x(t1) + ',' + y(above[i]);
      }
      for (let i = n - 1; i >= 0; i--) {
        const t1 = i + 1 < n ? series.t[i + 1] : endS;
        d += 'L' + x(t1) + ',' + y(below[i]) + 'L' + x(series.t[i]) + ',' + y(below[i]);
      }
      const area = svgEl('path', { d: d + 'Z', fill: colors[r], 'class': 'role-area' });
      area.append(svgEl('title'));
      area.lastChild.textContent = names[r];
      svg.append(area);
      for (let i = 0; i < n; i++) below[i] = above[i];
      drawn++;
    });
    svg.append(svgEl('line', { x1: left, x2: W - right, y1: y(cap), y2: y(cap), stroke: '#b00020', 'stroke-dasharray': '4 3' }));
    const capText = svgEl('text', { x: W - right - 2, y: y(cap) - 3, 'text-anchor': 'end', 'font-size': 10, fill: '#b00020' });
    capText.textContent = 'capacity ' + bytes(cap);
    svg.append(capText);
    const marker = svgEl('circle', { cx: x(dev.peak_s), cy: y(peak), r: 3.5, fill: '#000', 'class': 'peak-marker' });
    svg.append(svgEl('line', { x1: x(dev.peak_s), x2: x(dev.peak_s), y1: y(peak), y2: H - bottom, stroke: '#000', 'stroke-width': 0.6 }));
    svg.append(marker);
    const peakText = svgEl('text', { x: Math.min(x(dev.peak_s) + 5, W - 130), y: Math.max(y(peak) - 4, 10), 'font-size': 10 });
    peakText.textContent = 'peak ' + bytes(peak) + ' at ' + secs(dev.peak_s);
    svg.append(peakText);
    const name = svgEl('text', { x: left, y: 11, 'font-size': 11, 'font-weight': 600 });
    name.textContent = dev.name;
    svg.append(name);
    for (let k = 0; k <= 2; k++) {
      const t = svgEl('text', { x: left - 4, y: y(yMax * k / 2.16) + 3, 'text-anchor': 'end', 'font-size': 9 });
      t.textContent = bytes(yMax * k / 2.16);
      svg.append(t);
    }
    const axis = svgEl('text', { x: W - right, y: H - 6, 'text-anchor': 'end', 'font-size': 9 });
    axis.textContent = secs(endS);
    svg.append(axis);
    svg.dataset.points = n;
    svg.dataset.roles = drawn;
    svg.dataset.peakBytes = peak;
  }

  function explanation(p, pi) {
    const box = el('div');
    if (!p.violations.length) {
      const worst = p.devices.reduce((a, d) => Math.max(a, d.peak_memory_bytes / d.memory_capacity_bytes), 0);
      box.append(el('p', { class: 'good' }, 'Every device fits: the fullest is at ' + (100 * worst).toFixed(1) + '% of its capacity.'));
      return box;
    }
    p.violations.forEach((v, k) => {
      const dev = p.devices[v.device];
      const div = el('div', { class: 'violation', id: 'explain-' + pi + '-' + v.device });
      div.append(el('h4', {}, dev.name + ': over capacity by ' + bytes(v.over_bytes)));
      div.append(el('p', {}, 'Peak ' + bytes(dev.peak_memory_bytes) + ' of ' + bytes(dev.memory_capacity_bytes) +
        ' at ' + secs(v.peak_s) + '; first over at ' + secs(v.first_over_s) + '.'));
      const roles = Object.entries(dev.at_peak).filter(e => e[1] > 0).sort((a, b) => b[1] - a[1]);
      div.append(el('p', {}, 'Live at the peak: ' + roles.map(e => e[0].replace(/_/g, ' ') + ' ' + bytes(e[1])).join(', ') + '.'));
      div.append(table(['largest blocks', 'region', 'role', 'bytes'],
        v.largest.map(b => [b.tensor, b.region, b.role.replace(/_/g, ' '), bytes(b.bytes)]), [0, 0, 0, 1]));
      const fixes = (p.fixes[k] || { fixes: [] }).fixes;
      div.append(el('h4', {}, 'What would fix it (each change evaluated on the whole plan, unless marked as an estimate)'));
      const mark = f => f.estimate ? ' (estimate)' : '';
      div.append(table(['fix', 'change', 'saves here', 'peak after', 'fits after', 'step time after'],
        fixes.map(f => f.computed
          ? [f.name + mark(f), f.change, bytes(f.saved_bytes), bytes(f.peak_bytes), f.device_fits ? 'yes' : 'no', secs(f.step_time_s)]
          : [f.name, f.change, '', '', '', '']), [0, 0, 1, 1, 0, 1]));
      box.append(div);
    });
    return box;
  }

  function opsTable(p) {
    const details = el('details');
    details.append(el('summary', {}, p.ops.length + ' ops (name, type, split, devices)'));
    const filter = el('input', { class: 'filter', placeholder: 'filter by name or type' });
    const t = table(['op', 'type', 'split', 'devices'], p.ops.map(o => [o[0], o[1], o[2] || 'whole', o[3]]), [0, 0, 0, 0]);
    t.classList.add('ops');
    filter.addEventListener('input', () => {
      const q = filter.value.toLowerCase();
      Array.from(t.rows).slice(1).forEach(r => { r.style.display = r.textContent.toLowerCase().includes(q) ? '' : 'none'; });
    });
    details.append(filter, t);
    return details;
  }

  function section(p, pi) {
    const s = el('section', { class: 'plan', id: 'plan-' + pi });
    s.append(el('h2', {}, p.title));
    s.append(el('p', { class: 'muted' }, p.algorithm + (p.config ? ': ' + p.config : '')));
    const b = p.breakdown;
    s.append(el('p', {}, 'Step ' + secs(p.step_time_s) + ', ' + p.samples_per_s.toFixed(2) + ' samples/s; busiest device: compute ' +
      secs(b.compute_s) + ', exposed communication ' + secs(b.exposed_comm_s) + ', exposed swaps ' + secs(b.exposed_swap_s) +
      ', idle ' + secs(b.idle_s) + '.'));
    s.append(el('h3', {}, 'Timeline per device'));
    const legend = el('div', { class: 'legend' });
    LANES.forEach((l, i) => { const sp = el('span'); sp.append(el('i', { style: 'background:' + LANE_COLORS[i] }), l); legend.append(sp); });
    s.append(legend);
    for (const tl of p.timelines) {
      s.append(el('h4', {}, tl.label + ' (' + secs(tl.end_s) + ', ' + tl.events.length + ' spans)'));
      const c = el('canvas', { class: 'timeline', id: 'timeline-' + pi + '-' + tl.label });
      s.append(c);
      drawTimeline(c, tl, p.devices);
    }
    s.append(el('h3', {}, 'Memory over time per device'));
    const roles = el('div', { class: 'legend' });
    data.roles.forEach((r, i) => { const sp = el('span'); sp.append(el('i', { style: 'background:' + ROLE_COLORS[i] }), r); roles.append(sp); });
    s.append(roles);
    const measured = p.timelines.find(tl => tl.memory);
    if (measured)
      s.append(el('p', { class: 'muted' }, 'Beside each simulated chart, the memory its arena held in the measured run (' +
        measured.label + ', on its own time scale), grey.'));
    const row = el('div', { class: 'memory-row' });
    p.devices.forEach((d, di) => {
      const svg = svgEl('svg', { class: 'memory-chart', id: 'memory-' + pi + '-' + di });
      row.append(svg);
      drawMemory(svg, p.memory[di], d, p.step_time_s);
      if (!measured) return;
      const m = measured.memory[di];
      const msvg = svgEl('svg', { class: 'memory-chart', id: 'memory-measured-' + pi + '-' + di });
      row.append(msvg);
      drawMemory(msvg, { t: m.t, roles: [m.bytes] },
        { name: d.name + ' (measured)', memory_capacity_bytes: d.memory_capacity_bytes, peak_memory_bytes: m.peak_bytes, peak_s: m.peak_s },
        measured.end_s, ['#9a9a9a'], ['measured']);
    });
    s.append(row);
    s.append(el('h3', {}, 'Memory explanation'));
    s.append(explanation(p, pi));
    s.append(el('h3', {}, 'Communication per link'));
    if (!p.links.length) s.append(el('p', { class: 'muted' }, 'No communication.'));
    else {
      const max = Math.max(...p.links.map(l => l[1]));
      const t = table(['link', 'bytes', ''], p.links.map(l => [l[0], bytes(l[1]), ''] ), [0, 1, 0]);
      Array.from(t.rows).slice(1).forEach((r, i) => {
        r.cells[2].append(el('span', { class: 'bar', style: 'width:' + Math.max(1, 200 * p.links[i][1] / max) + 'px' }));
      });
      t.id = 'links-' + pi;
      s.append(t);
    }
    s.append(el('h3', {}, 'Plan per op'));
    s.append(opsTable(p));
    return s;
  }

  root.append(el('h1', {}, 'cleave report'));
  root.append(el('p', { class: 'muted' }, data.model + ' on ' + data.cluster));
  const summary = table(['plan', 'step time', 'samples/s', 'largest peak', 'fits', 'devices over', 'communication'],
    data.plans.map(p => {
      const worst = p.devices.reduce((a, d) => d.peak_memory_bytes > a.peak_memory_bytes ? d : a, p.devices[0]);
      return [p.title, secs(p.step_time_s), p.samples_per_s.toFixed(2),
        bytes(worst.peak_memory_bytes) + ' of ' + bytes(worst.memory_capacity_bytes),
        p.fits ? 'yes' : 'no', String(p.violations.length), bytes(p.comm_bytes)];
    }), [0, 1, 1, 1, 0, 1, 1]);
  summary.id = 'summary';
  root.append(summary);
  const plans = el('div', { class: 'plans', style: 'grid-template-columns: repeat(' + data.plans.length + ', minmax(1010px, 1fr))' });
  data.plans.forEach((p, pi) => plans.append(section(p, pi)));
  root.append(plans);
  document.body.dataset.rendered = 'ok';
})();
)js";
}

}  // namespace cleave::report
