// Spend over time as a stacked bar chart in plain SVG (no library).
"use strict";

(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#4b5563", "#db2777"];
  const BUCKET_SECONDS = { hour: 3600, day: 86400 };
  const DEFAULT_WIDTH = 640;
  const HEIGHT = 220;
  const MARGIN = { top: 12, right: 12, bottom: 28, left: 56 };

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function colorFor(agents, agent) {
    return PALETTE[agents.indexOf(agent) % PALETTE.length];
  }

  // Rounds the axis maximum up to 1, 2 or 5 times a power of ten.
  function niceMax(value) {
    if (value <= 0) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const step of [1, 2, 5, 10]) {
      if (value <= step * power) return step * power;
    }
    return 10 * power;
  }

  function money(value) {
    if (value === 0) return "$0";
    if (value < 0.01) return "$" + value.toFixed(4);
    if (value < 10) return "$" + value.toFixed(2);
    return "$" + value.toFixed(0);
  }

  function label(date, bucket) {
    if (bucket === "hour") return String(date.getHours()).padStart(2, "0") + ":00";
    return date.toLocaleDateString(undefined, { month: "short", day: "numeric" });
  }

  // One slot per bucket from `since` to now, so quiet periods show as gaps rather than vanish.
  function slots(series) {
    const step = (BUCKET_SECONDS[series.bucket] || 3600) * 1000;
    const first = Math.floor(new Date(series.since).getTime() / step) * step;
    const result = [];
    for (let t = first; t <= Date.now() && result.length < 400; t += step) result.push(t);
    for (const b of series.buckets) {
      const t = Math.floor(new Date(b.start).getTime() / step) * step;
      if (!result.includes(t)) result.push(t);
    }
    return { step, times: result.sort((a, b) => a - b) };
  }

  function stack(series) {
    const { step, times } = slots(series);
    const agents = [...new Set(series.buckets.map((b) => b.agent))].sort();
    const cost = new Map(times.map((t) => [t, new Map()]));
    for (const b of series.buckets) {
      const t = Math.floor(new Date(b.start).getTime() / step) * step;
      const row = cost.get(t);
      row.set(b.agent, (row.get(b.agent) || 0) + Number(b.cost_usd || 0));
    }
    return { times, agents, cost };
  }

  // A tick shows its value exactly ($0.025, not $0.03): ticks are quarters of a round top.
  function tickMoney(value) {
    return value === 0 ? "$0" : "$" + String(Number(value.toPrecision(3)));
  }

  function drawAxes(root, top, plotW, plotH) {
    for (let i = 0; i <= 4; i += 1) {
      const y = MARGIN.top + plotH - (plotH * i) / 4;
      root.appendChild(svg("line", { x1: MARGIN.left, x2: MARGIN.left + plotW, y1: y, y2: y, class: "grid" }));
      root.appendChild(
        svg("text", { x: MARGIN.left - 6, y: y + 4, "text-anchor": "end", class: "tick" }, tickMoney((top * i) / 4))
      );
    }
  }

  function drawBars(root, data, series, top, plotW, plotH, height) {
    const slot = plotW / Math.max(data.times.length, 1);
    const barW = Math.max(2, Math.min(28, slot * 0.7));
    const every = Math.ceil(data.times.length / Math.max(2, Math.floor(plotW / 80)));
    data.times.forEach((t, index) => {
      const x = MARGIN.left + index * slot + (slot - barW) / 2;
      let y = MARGIN.top + plotH;
      const row = data.cost.get(t);
      for (const agent of data.agents) {
        const value = row.get(agent) || 0;
        if (value <= 0) continue;
        const h = Math.max(1, (value / top) * plotH);
        y -= h;
        const bar = svg("rect", { x, y, width: barW, height: h, fill: colorFor(data.agents, agent), rx: 1.5 });
        bar.appendChild(svg("title", {}, `${agent} · ${new Date(t).toLocaleString()} · ${money(value)}`));
        root.appendChild(bar);
      }
      if (index % every === 0) {
        const text = label(new Date(t), series.bucket);
        root.appendChild(
          svg("text", { x: x + barW / 2, y: height - 8, "text-anchor": "middle", class: "tick" }, text)
        );
      }
    });
  }

  function legend(agents) {
    const list = document.createElement("ul");
    list.className = "legend";
    for (const agent of agents) {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = colorFor(agents, agent);
      item.append(swatch, agent);
      list.appendChild(item);
    }
    return list;
  }

  // Returns a <figure> holding the chart and its legend. `width` is the pixel width it will
  // occupy, so that text is drawn at its natural size.
  function spendChart(series, width) {
    const WIDTH = Math.max(320, Math.floor(width || DEFAULT_WIDTH));
    const data = stack(series);
    const totals = data.times.map((t) => [...data.cost.get(t).values()].reduce((a, b) => a + b, 0));
    const top = niceMax(Math.max(0, ...totals));
    const plotW = WIDTH - MARGIN.left - MARGIN.right;
    const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
    const root = svg("svg", {
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      class: "chart",
      role: "img",
      "aria-label": "Spend over time in US dollars",
    });
    drawAxes(root, top, plotW, plotH);
    drawBars(root, data, series, top, plotW, plotH, HEIGHT);
    const figure = document.createElement("figure");
    figure.className = "chart-figure";
    figure.appendChild(root);
    const spent = totals.reduce((a, b) => a + b, 0);
    const caption = document.createElement("figcaption");
    caption.textContent = spent > 0 ? `Total ${money(spent)}` : "No spend in this period";
    figure.append(caption, legend(data.agents));
    return figure;
  }

  window.FlotillaChart = { spendChart, money };
})();
