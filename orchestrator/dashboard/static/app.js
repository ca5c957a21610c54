// The Flotilla dashboard: a fleet overview, a page per agent and a live event feed.
// Every data source is optional: one that does not answer shows "unavailable" in its place.
"use strict";

(function () {
  const FEED_LIMIT = 200;
  const REFRESH_DELAY_MS = 700;
  const RANGES = {
    "24h": { seconds: 86400, bucket: "hour" },
    "7d": { seconds: 7 * 86400, bucket: "day" },
    "30d": { seconds: 30 * 86400, bucket: "day" },
  };

  const state = {
    info: { fleet: "", agents: [] },
    lastSeq: 0,
    route: { page: "fleet" },
    refreshers: [],
    refreshTimer: null,
    range: "24h",
  };
  let views = null; // operator.js, built in start() once every helper here exists
  let approvals = null; // approvals.js, likewise
  let workflows = null; // workflows.js, likewise

  // ------------------------------------------------------------------ DOM helpers

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      // The page's CSP refuses style attributes; properties set through the CSSOM are allowed.
      else if (key === "style") for (const rule of String(value).split(";")) setStyle(node, rule);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function setStyle(node, rule) {
    const at = rule.indexOf(":");
    if (at > 0) node.style.setProperty(rule.slice(0, at).trim(), rule.slice(at + 1).trim());
  }

  function card(title, body, actions) {
    return h("section", { class: "card" }, h("div", { class: "card-head" }, h("h2", { text: title }), actions), body);
  }

  function unavailable(what, error) {
    const reason = error && error.status ? ` (HTTP ${error.status})` : "";
    return h("p", { class: "unavailable", title: error ? error.message : "" }, `${what} unavailable${reason}`);
  }

  function badge(value, kind) {
    return h("span", { class: `badge badge-${kind || tone(value)}` }, value === undefined || value === null ? "?" : value);
  }

  // A unit runs while the operator holds its agent: the hold is what the operator needs to see.
  function shownState(row) {
    return row.held || (row.hibernated ? "hibernated" : row.state);
  }

  function tone(value) {
    const v = String(value || "").toLowerCase();
    if (["running", "healthy", "ok", "idle", "done", "live", "agent"].includes(v)) return "ok";
    if (["starting", "busy", "queued", "claimed", "created", "operator"].includes(v)) return "info";
    if (["unhealthy", "error", "dead", "failed", "crashed", "limit", "refused"].includes(v)) return "bad";
    if (["warning", "restarting", "backoff", "external", "down", "exited", "paused", "stopped"].includes(v)) return "warn";
    return "muted";
  }

  function table(columns, rows, empty) {
    if (!rows.length) return h("p", { class: "muted" }, empty || "Nothing yet.");
    const cls = (c) => [c.num ? "num" : "", c.nowrap ? "nowrap" : "", c.wide ? "wide" : "", c.opt ? "opt" : ""].join(" ").trim();
    return h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "grid-table" },
        h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: cls(c) }, c.title)))),
        h("tbody", {}, rows.map((row) => h("tr", {}, columns.map((c) => h("td", { class: cls(c) }, c.cell(row))))))
      )
    );
  }

  // ------------------------------------------------------------------ formatting

  function bytes(n) {
    if (n === undefined || n === null) return "–";
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
    if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
    return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
  }

  function duration(seconds) {
    if (seconds === undefined || seconds === null) return "–";
    const s = Math.floor(seconds);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
    return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
  }

  function money(value) {
    return value === undefined || value === null ? "–" : window.FlotillaChart.money(Number(value));
  }

  function when(iso) {
    if (!iso) return "–";
    const date = new Date(iso);
    const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
    if (date.toDateString() === new Date().toDateString()) return time;
    return `${date.toLocaleDateString([], { month: "short", day: "numeric" })} ${time.slice(0, 5)}`;
  }

  function short(value, max) {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return text.length > max ? text.slice(0, max - 1) + "…" : text;
  }

  // ------------------------------------------------------------------ API

  class ApiFailure extends Error {
    constructor(status, message, details) {
      super(message);
      this.status = status;
      this.details = details || [];
    }
  }

  async function request(path, options, accept) {
    try {
      return await fetch(path, {
        credentials: "same-origin",
        // The custom header tells the orchestrator this call comes from the dashboard's own page
        // (a cross-site form cannot send it): calls that change something need it.
        headers: { accept, "content-type": "application/json", "x-flotilla-dashboard": "1" },
        ...options,
      });
    } catch (err) {
      throw new ApiFailure(0, `cannot reach the orchestrator: ${err.message}`);
    }
  }

  async function api(path, options) {
    const response = await request(path, options, "application/json");
    return answer(response);
  }

  // A POST answered with server-sent events: onEvent(name, data) for each, as it arrives.
  async function streamed(path, payload, onEvent) {
    const response = await request(path, { method: "POST", body: JSON.stringify(payload) }, "text/event-stream");
    if (!response.ok) return answer(response);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return null;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let name = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (data) onEvent(name, JSON.parse(data));
      }
    }
  }

  async function answer(response) {
    const text = await response.text();
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (err) {
      body = null;
    }
    if (!response.ok) {
      const message = (body && (body.message || body.detail)) || text || response.statusText;
      throw new ApiFailure(response.status, message, body && body.details);
    }
    return body;
  }

  // Resolves to {data} or {error}; never rejects, so one missing source cannot break a page.
  async function attempt(path) {
    try {
      return { data: await api(path) };
    } catch (error) {
      return { error };
    }
  }

  function listOf(data, ...keys) {
    if (Array.isArray(data)) return data;
    for (const key of keys) if (data && Array.isArray(data[key])) return data[key];
    return [];
  }

  const enc = encodeURIComponent;

  // ------------------------------------------------------------------ routing

  function parseRoute() {
    const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "agent" && parts[1]) return { page: "agent", agent: parts[1], tab: parts[2] || "overview" };
    if (parts[0] === "trace") return { page: "trace", ref: parts[1] || "" };
    return { page: "fleet" };
  }

  function render() {
    state.route = parseRoute();
    state.refreshers = [];
    const view = document.getElementById("view");
    view.replaceChildren();
    const crumbs = document.getElementById("crumbs");
    crumbs.replaceChildren(h("a", { href: "#/" }, "Fleet"));
    filterFeed(state.route.page === "agent" ? state.route.agent : null);
    if (state.route.page === "agent") {
      crumbs.append(h("span", { class: "sep" }, "/"), h("span", {}, state.route.agent));
      renderAgent(view, state.route.agent, state.route.tab);
    } else if (state.route.page === "trace") {
      crumbs.append(h("span", { class: "sep" }, "/"), h("span", {}, "trace"));
      views.traceView(view, state.route.ref);
    } else {
      renderFleet(view);
    }
  }

  // Runs every refresher of the current page once, shortly after a burst of events.
  function scheduleRefresh(event) {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(() => {
      for (const refresh of state.refreshers) refresh(event);
    }, REFRESH_DELAY_MS);
  }

  // ------------------------------------------------------------------ fleet page

  async function fleetRows() {
    const result = await attempt("/api/v1/fleet");
    if (result.error) {
      return { error: result.error, rows: state.info.agents.map((a) => ({ name: a.name, role: a.role })) };
    }
    return { rows: listOf(result.data, "agents") };
  }

  function summary(rows, error, attention) {
    const sum = (key) => rows.reduce((total, r) => total + (Number(r[key]) || 0), 0);
    const running = rows.filter((r) => r.state === "running").length;
    const trouble = attention
      ? attention.count
      : rows.filter((r) => r.health === "unhealthy" || r.dead_letters > 0 || ["dead", "exited"].includes(r.state)).length;
    const tile = (label, value, kind) =>
      h("div", { class: `tile ${kind || ""}` }, h("div", { class: "tile-value" }, value), h("div", { class: "tile-label" }, label));
    return h(
      "div",
      { class: "tiles" },
      tile("agents running", error ? "–" : `${running} / ${rows.length}`),
      tile("need attention", error ? "–" : String(trouble), trouble ? "tile-bad" : ""),
      tile("spend today", error ? "–" : money(sum("spend_today_usd"))),
      tile("pending items", error ? "–" : String(sum("pending"))),
      tile("waiting to wake", error ? "–" : String(rows.filter((r) => r.wake_position).length))
    );
  }

  // A sleeping agent with work beyond max_awake waits its turn: its place in the queue shows.
  function stateBadge(r) {
    const state = shownState(r);
    return r.wake_position ? h("span", {}, badge(state), ` waits to wake (#${r.wake_position})`) : badge(state);
  }

  const FLEET_COLUMNS = [
    { title: "Agent", cell: (r) => h("a", { href: `#/agent/${enc(r.name)}`, class: "agent-link" }, r.name) },
    { title: "Role", opt: true, cell: (r) => h("span", { class: "muted" }, r.role || "") },
    { title: "State", cell: (r) => (r.state === undefined ? h("span", { class: "unavailable" }, "unavailable") : stateBadge(r)) },
    { title: "Health", cell: (r) => (r.health === undefined ? "–" : badge(r.health)) },
    { title: "Restarts", num: true, opt: true, cell: (r) => r.restarts ?? "–" },
    { title: "Uptime", num: true, opt: true, cell: (r) => duration(r.uptime_s) },
    { title: "Memory", num: true, opt: true, cell: (r) => bytes(r.memory_bytes) },
    { title: "Spend today", num: true, cell: (r) => money(r.spend_today_usd) },
    { title: "Pending", num: true, opt: true, cell: (r) => r.pending ?? "–" },
  ];

  function renderFleet(view) {
    const summaryBox = h("div", {});
    const tableBox = h("div", { id: "fleet-table" }, h("p", { class: "muted" }, "Loading…"));
    const chartBox = h("div", {});
    const budgetBox = h("div", { id: "fleet-budgets" });
    const approvalsBox = h("div", { id: "approvals" }, h("p", { class: "muted" }, "Loading…"));
    const workflowsBox = h("div", { id: "workflows" }, h("p", { class: "muted" }, "Loading…"));
    view.append(
      summaryBox,
      card("Waiting for approval", approvalsBox),
      card("Workflow runs", workflowsBox),
      card("Agents", tableBox),
      card("Budgets", budgetBox),
      card("Spend over time", chartBox, rangePicker(() => loadSpend(chartBox, null)))
    );
    const load = async () => {
      const [{ rows, error }, attention] = await Promise.all([fleetRows(), views.attention()]);
      summaryBox.replaceChildren(summary(rows, error, attention.data), views.attentionList(attention.data));
      views.budgetCard(budgetBox, null);
      tableBox.replaceChildren(
        error ? unavailable("Fleet status", error) : "",
        table(FLEET_COLUMNS, rows, "No agents in this fleet.")
      );
    };
    state.refreshers.push((event) => {
      if (!event || !String(event.type).startsWith("workspace.")) load();
      approvals.approvalsPanel(approvalsBox);
      if (!event || String(event.type).startsWith("workflow.")) workflows.workflowsPanel(workflowsBox);
    });
    load();
    approvals.approvalsPanel(approvalsBox);
    workflows.workflowsPanel(workflowsBox);
    loadSpend(chartBox, null);
  }

  // ------------------------------------------------------------------ spend chart

  function rangePicker(onChange) {
    return h(
      "div",
      { class: "segmented" },
      Object.keys(RANGES).map((key) =>
        h(
          "button",
          {
            class: key === state.range ? "active" : "",
            onclick: (e) => {
              state.range = key;
              for (const b of e.target.parentNode.children) b.classList.toggle("active", b === e.target);
              onChange();
            },
          },
          key
        )
      )
    );
  }

  async function loadSpend(box, agent) {
    const range = RANGES[state.range];
    const since = new Date(Date.now() - range.seconds * 1000).toISOString();
    let path = `/api/v1/usage?since=${enc(since)}&bucket=${range.bucket}`;
    if (agent) path += `&agent=${enc(agent)}`;
    const result = await attempt(path);
    if (result.error || !result.data || !Array.isArray(result.data.buckets)) {
      box.replaceChildren(unavailable("Usage data", result.error));
      return;
    }
    const series = { bucket: range.bucket, since, ...result.data };
    box.replaceChildren(window.FlotillaChart.spendChart(series, box.clientWidth));
  }

  // ------------------------------------------------------------------ agent page

  const AGENT_TABS = { overview: "Overview", transcript: "Transcript", memory: "Memory", events: "Events" };

  function renderAgent(view, name, tab) {
    const known = state.info.agents.find((a) => a.name === name);
    const head = h("div", { class: "agent-head" }, h("h1", {}, name), known && known.role ? h("span", { class: "role" }, known.role) : "");
    const stats = h("div", {});
    const reloadStats = async () => {
      const [{ rows, error }, attention] = await Promise.all([fleetRows(), views.attention()]);
      const row = rows.find((r) => r.name === name);
      const mine = attention.data && { count: 1, agents: attention.data.agents.filter((a) => a.agent === name) };
      stats.replaceChildren(error || !row ? unavailable("Agent status", error) : agentStats(row), views.attentionList(mine));
    };
    const tabs = h(
      "nav",
      { class: "page-tabs" },
      Object.entries(AGENT_TABS).map(([key, label]) =>
        h("a", { href: `#/agent/${enc(name)}/${key}`, class: key === tab ? "active" : "", "data-tab": key }, label)
      )
    );
    view.append(head, views.actionBar(name, () => setTimeout(reloadStats, 300)), stats, tabs);
    reloadStats();
    const body = h("div", { class: "tab-body" });
    view.append(body);
    if (tab === "transcript") {
      views.transcriptTab(name, body);
      state.refreshers.push((event) => {
        if (event && event.agent === name && /^(run\.|compaction\.|agent\.turn)/.test(String(event.type))) views.transcriptTab(name, body);
      });
    } else if (tab === "memory") views.memoryTab(name, body);
    else if (tab === "events") {
      const names = new Set(state.info.agents.map((a) => a.name));
      views.eventsTab(name, body, names);
      state.refreshers.push((event) => {
        if (event && event.agent === name) views.eventsTab(name, body, names);
      });
    } else renderOverview(body, name, reloadStats);
  }

  function renderOverview(view, name, loadStats) {
    const workspaceBox = h("div", {}, h("p", { class: "muted" }, "Loading…"));
    const filePanel = h("div", { class: "file-panel", hidden: true });
    const runsBox = h("div", {});
    const inboxBox = h("div", {});
    const learningsBox = h("div", {});
    const chartBox = h("div", {});
    const budgetBox = h("div", { id: "agent-budgets" });
    view.append(
      card("Budget", budgetBox),
      card("Workspace", h("div", {}, workspaceBox, filePanel)),
      card("Recent runs", runsBox),
      h(
        "div",
        { class: "columns" },
        h("div", {}, card("Inbox", inboxBox)),
        h("div", {}, card("Learnings", learningsBox), card("Memory search", memorySearch(name)))
      ),
      card("Spend over time", chartBox, rangePicker(() => loadSpend(chartBox, name)))
    );
    const loadWorkspace = () => loadWorkspaceFiles(name, workspaceBox, learningsBox, filePanel);
    const loadRuns = () => loadRunsInto(name, runsBox);
    const loadInbox = () => loadInboxInto(name, inboxBox);
    state.refreshers.push((event) => {
      if (event && event.agent && event.agent !== name) return;
      const type = String((event && event.type) || "");
      if (type.startsWith("workspace.") || type === "compaction.done") loadWorkspace();
      else {
        loadStats();
        loadRuns();
        loadInbox();
        if (type.startsWith("budget.") || type === "gateway.call") views.budgetCard(budgetBox, name);
      }
    });
    views.budgetCard(budgetBox, name);
    loadWorkspace();
    loadRuns();
    loadInbox();
    loadSpend(chartBox, name);
  }

  function agentStats(row) {
    const item = (label, value) => h("div", { class: "stat" }, h("span", { class: "stat-label" }, label), h("span", { class: "stat-value" }, value));
    return h(
      "div",
      { class: "stats" },
      item("State", badge(shownState(row))),
      item("Health", badge(row.health)),
      item("Restarts", String(row.restarts ?? "–")),
      item("Uptime", duration(row.uptime_s)),
      item("Memory", bytes(row.memory_bytes)),
      item("Spend today", money(row.spend_today_usd)),
      item("Pending", String(row.pending ?? "–"))
    );
  }

  function fillBar(pct) {
    if (pct === null || pct === undefined) return h("span", { class: "muted" }, "no cap");
    const level = pct >= 90 ? "bad" : pct >= 70 ? "warn" : "ok";
    const bar = h("span", { class: `fill fill-${level}` });
    bar.style.width = `${Math.min(100, pct)}%`;
    return h("span", { class: "fill-wrap", title: `${pct}% of cap` }, h("span", { class: "fill-track" }, bar), h("span", { class: "fill-pct" }, `${pct}%`));
  }

  async function loadWorkspaceFiles(agent, box, learningsBox, panel) {
    const result = await attempt(`/api/v1/agents/${enc(agent)}/workspace`);
    if (result.error) {
      box.replaceChildren(unavailable("Workspace", result.error));
      learningsBox.replaceChildren(unavailable("Learnings", result.error));
      return;
    }
    const files = result.data.files || [];
    const identity = files.filter((f) => f.kind === "identity");
    box.replaceChildren(
      table(
        [
          { title: "File", nowrap: true, cell: (f) => h("button", { class: "link", onclick: () => openFile(agent, f, panel) }, f.name) },
          { title: "Size", num: true, cell: (f) => (f.exists ? bytes(f.size) : h("span", { class: "muted" }, "absent")) },
          { title: "Cap", num: true, cell: (f) => (f.cap ? bytes(f.cap) : "–") },
          { title: "Fill", cell: (f) => fillBar(f.fill_pct) },
          { title: "Version", num: true, cell: (f) => (f.version ? `v${f.version}` : "–") },
          { title: "By", cell: (f) => (f.author ? badge(f.author) : "–") },
        ],
        identity,
        "No workspace files yet."
      )
    );
    renderLearnings(agent, files.filter((f) => f.kind === "learning"), learningsBox);
  }

  function renderLearnings(agent, files, box) {
    if (!files.length) {
      box.replaceChildren(h("p", { class: "muted" }, "No learnings recorded yet."));
      return;
    }
    box.replaceChildren(
      h(
        "ul",
        { class: "learnings" },
        files.map((f) => {
          const body = h("pre", { class: "content", hidden: true });
          const toggle = async () => {
            if (!body.hidden) {
              body.hidden = true;
              return;
            }
            const result = await attempt(`/api/v1/agents/${enc(agent)}/workspace/${f.name.split("/").map(enc).join("/")}`);
            body.textContent = result.error ? `unavailable: ${result.error.message}` : result.data.content;
            body.hidden = false;
          };
          return h("li", {}, h("button", { class: "link", onclick: toggle }, f.name.replace(/^learnings\//, "")), h("span", { class: "muted" }, ` ${bytes(f.size)}`), body);
        })
      )
    );
  }

  // ------------------------------------------------------------------ one workspace file

  function filePath(agent, name) {
    return `/api/v1/agents/${enc(agent)}/workspace/${name.split("/").map(enc).join("/")}`;
  }

  function openFile(agent, file, panel) {
    panel.hidden = false;
    const body = h("div", {});
    const tabs = ["Content", "History", "Diff"].concat(file.editable ? ["Edit"] : []);
    const bar = h(
      "div",
      { class: "tabs" },
      tabs.map((tab, i) =>
        h(
          "button",
          {
            class: i === 0 ? "active" : "",
            onclick: (e) => {
              for (const b of bar.children) b.classList.toggle("active", b === e.target);
              showTab(tab, agent, file, body, panel);
            },
          },
          tab
        )
      ),
      h("button", { class: "close", title: "Close", onclick: () => ((panel.hidden = true), panel.replaceChildren()) }, "×")
    );
    panel.replaceChildren(h("h3", {}, file.name), bar, body);
    showTab("Content", agent, file, body, panel);
  }

  async function showTab(tab, agent, file, body, panel) {
    body.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    const base = filePath(agent, file.name);
    if (tab === "Content") {
      const result = await attempt(base);
      body.replaceChildren(result.error ? unavailable("File", result.error) : h("pre", { class: "content" }, result.data.content || "(empty)"));
    } else if (tab === "History") {
      const result = await attempt(`${base}/history`);
      body.replaceChildren(
        result.error
          ? unavailable("History", result.error)
          : table(
              [
                { title: "Version", num: true, cell: (v) => `v${v.version}` },
                { title: "Author", cell: (v) => badge(v.author) },
                { title: "When", nowrap: true, cell: (v) => when(v.at) },
                { title: "Size", num: true, cell: (v) => bytes(v.size) },
                { title: "Reason", cell: (v) => v.reason || "" },
              ],
              [...result.data.versions].reverse(),
              "No versions recorded."
            )
      );
    } else if (tab === "Diff") {
      const result = await attempt(`${base}/diff`);
      body.replaceChildren(result.error ? unavailable("Diff", result.error) : diffView(result.data));
    } else {
      const result = await attempt(base);
      body.replaceChildren(result.error ? unavailable("File", result.error) : editor(agent, file, result.data, panel));
    }
  }

  function diffView(diff) {
    if (!diff.diff) return h("p", { class: "muted" }, `v${diff.a} and v${diff.b} are identical.`);
    const lines = diff.diff.split("\n").map((line) => {
      const kind = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      return h("span", { class: `diff-line ${kind}` }, line + "\n");
    });
    return h("pre", { class: "content diff" }, lines);
  }

  function editor(agent, file, current, panel) {
    const area = h("textarea", { class: "editor", spellcheck: "false" });
    area.value = current.content;
    const reason = h("input", { class: "reason", placeholder: "Reason (optional)", maxlength: "500" });
    const message = h("div", { class: "edit-message" });
    const counter = h("span", { class: "muted" });
    const updateCounter = () => {
      const size = new TextEncoder().encode(area.value).length;
      counter.textContent = current.cap ? `${size} / ${current.cap} bytes` : `${size} bytes`;
      counter.classList.toggle("over", Boolean(current.cap && size > current.cap));
    };
    area.addEventListener("input", updateCounter);
    updateCounter();
    const save = async () => {
      message.replaceChildren();
      try {
        const result = await api(filePath(agent, file.name), {
          method: "PUT",
          body: JSON.stringify({ content: area.value, reason: reason.value }),
        });
        message.replaceChildren(h("p", { class: "ok-text" }, `Saved as version ${result.version}.`));
        scheduleRefresh({ type: "workspace.changed", agent });
      } catch (error) {
        message.replaceChildren(
          h("p", { class: "error-text" }, `Refused: ${error.message}`),
          error.details && error.details.length ? h("ul", {}, error.details.map((d) => h("li", {}, d))) : ""
        );
      }
    };
    return h("div", { class: "edit" }, area, h("div", { class: "edit-bar" }, reason, counter, h("button", { class: "primary", onclick: save }, "Save")), message);
  }

  // ------------------------------------------------------------------ runs, inbox, memory

  async function loadRunsInto(agent, box) {
    const result = await attempt(`/api/v1/runs?agent=${enc(agent)}&limit=20`);
    if (result.error) return box.replaceChildren(unavailable("Runs", result.error));
    const rows = listOf(result.data, "runs", "items").slice(0, 20);
    box.replaceChildren(
      table(
        [
          { title: "Started", nowrap: true, cell: (r) => when(r.started_at || r.at) },
          { title: "Trigger", cell: (r) => r.trigger || "–" },
          { title: "Outcome", cell: (r) => badge(r.outcome || r.status) },
          { title: "Tokens in/out", num: true, cell: (r) => (r.tokens_in !== undefined ? `${r.tokens_in} / ${r.tokens_out ?? 0}` : "–") },
          { title: "Cost", num: true, cell: (r) => money(r.cost_usd) },
          { title: "Detail", wide: true, cell: (r) => h("span", { class: "muted", title: r.detail || "" }, short(r.detail || "", 60)) },
        ],
        rows,
        "No runs yet."
      )
    );
  }

  async function loadInboxInto(agent, box) {
    const result = await attempt(`/api/v1/agents/${enc(agent)}/inbox`);
    if (result.error) return box.replaceChildren(unavailable("Inbox", result.error));
    const rows = listOf(result.data, "items");
    const columns = [
      { title: "Received", nowrap: true, cell: (r) => when(r.created_at) },
      { title: "Kind", cell: (r) => String(r.kind || "–").replace(/_/g, " ") },
      { title: "From", cell: (r) => r.sender || "–" },
      { title: "State", cell: (r) => badge(r.state) },
      { title: "Message", wide: true, cell: (r) => short(r.text || r.operation || "", 70) },
      { title: "Trace", cell: (r) => (r.id ? views.traceLink(r.id) : "–") },
    ].filter((c) => c.title !== "State" || rows.some((r) => r.state));
    box.replaceChildren(table(columns, rows, "Inbox is empty."));
  }

  // Search answers may be one list, or lists per kind (facts, episodes, files); take them all.
  function memoryHits(data) {
    if (Array.isArray(data)) return data;
    const hits = [];
    for (const [kind, value] of Object.entries(data || {})) {
      if (Array.isArray(value)) hits.push(...value.map((hit) => (typeof hit === "object" ? { kind, ...hit } : { kind, text: hit })));
    }
    return hits.sort((a, b) => (Number(b.score) || 0) - (Number(a.score) || 0));
  }

  function hitText(hit) {
    return hit.text || hit.content || hit.snippet || (hit.fact && hit.fact.text) || (hit.episode && hit.episode.summary) || hit;
  }

  function hitSource(hit) {
    if (hit.path) return hit.start_line ? `${hit.path}:${hit.start_line}` : hit.path;
    if (hit.fact) return `fact · ${hit.fact.category || ""}`.replace(/ · $/, "");
    if (hit.episode) return "episode";
    return hit.source || hit.kind || "";
  }

  function memorySearch(agent) {
    const input = h("input", { type: "search", placeholder: "Search this agent's memory", "aria-label": "Memory search" });
    const results = h("div", { class: "memory-results" });
    const run = async (e) => {
      e.preventDefault();
      if (!input.value.trim()) return;
      results.replaceChildren(h("p", { class: "muted" }, "Searching…"));
      const result = await attempt(`/api/v1/agents/${enc(agent)}/memory/search?q=${enc(input.value.trim())}`);
      if (result.error) return results.replaceChildren(unavailable("Memory search", result.error));
      const hits = memoryHits(result.data);
      results.replaceChildren(
        hits.length
          ? h(
              "ol",
              { class: "hits" },
              hits.map((hit) =>
                h(
                  "li",
                  {},
                  h("div", {}, short(hitText(hit), 400)),
                  h("div", { class: "muted small" }, [hitSource(hit), hit.score !== undefined ? `score ${Number(hit.score).toFixed(3)}` : ""].filter(Boolean).join(" · "))
                )
              )
            )
          : h("p", { class: "muted" }, "No matches.")
      );
    };
    return h("form", { class: "search", onsubmit: run }, h("div", { class: "search-row" }, input, h("button", { type: "submit" }, "Search")), results);
  }

  // ------------------------------------------------------------------ live events

  // On an agent's page the feed shows that agent's events only.
  function filterFeed(agent) {
    const feed = document.getElementById("feed");
    feed.dataset.agent = agent || "";
    for (const item of feed.children) item.hidden = Boolean(agent) && item.dataset.agent !== agent;
    const shown = [...feed.children].filter((item) => !item.hidden).length;
    document.getElementById("feed-count").textContent = agent ? `${shown} of ${agent}` : `${shown} shown`;
  }

  function addEvent(event, fresh) {
    if (event.seq && event.seq <= state.lastSeq) return;
    state.lastSeq = Math.max(state.lastSeq, event.seq || 0);
    const feed = document.getElementById("feed");
    const family = String(event.type).split(".")[0];
    const item = h(
      "li",
      { class: `event${fresh ? " fresh" : ""}`, "data-seq": event.seq, "data-type": event.type, "data-agent": event.agent || "" },
      h("div", { class: "event-top" }, h("span", { class: `etype etype-${family}` }, event.type), h("time", { datetime: event.at }, when(event.at))),
      event.agent ? h("a", { class: "event-agent", href: `#/agent/${enc(event.agent)}` }, event.agent) : "",
      h("div", { class: "event-data" }, views.eventData(event.data, new Set(state.info.agents.map((a) => a.name))))
    );
    feed.prepend(item);
    while (feed.children.length > FEED_LIMIT) feed.lastChild.remove();
    filterFeed(feed.dataset.agent);
  }

  function setLive(status) {
    const node = document.getElementById("live-status");
    node.dataset.state = status;
    node.textContent = status;
  }

  async function startFeed() {
    const recent = await attempt("/api/v1/events/recent?limit=50");
    if (recent.error) {
      document.getElementById("feed").replaceChildren(h("li", {}, unavailable("Events", recent.error)));
    } else {
      for (const event of recent.data) addEvent(event, false);
    }
    const source = new EventSource(`/api/v1/events?after=${state.lastSeq}`);
    source.onopen = () => setLive("live");
    source.onerror = () => setLive(source.readyState === EventSource.CLOSED ? "offline" : "reconnecting");
    source.onmessage = (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch (err) {
        return;
      }
      addEvent(event, true);
      scheduleRefresh(event);
    };
  }

  // ------------------------------------------------------------------ start

  async function start() {
    const helpers = { h, card, table, badge, unavailable, attempt, api, streamed, when, short, money, duration, enc };
    views = window.FlotillaOperator(helpers);
    approvals = window.FlotillaApprovals(helpers);
    workflows = window.FlotillaWorkflows(helpers);
    const info = await attempt("/dashboard/info.json");
    if (!info.error) state.info = info.data;
    document.getElementById("fleet-name").textContent = state.info.fleet || "";
    document.title = state.info.fleet ? `Flotilla · ${state.info.fleet}` : "Flotilla";
    window.addEventListener("hashchange", render);
    render();
    startFeed();
  }

  start();
})();
