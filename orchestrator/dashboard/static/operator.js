// Operator views of the dashboard: transcript, request trace, memory browser, budget gauges,
// agent actions and readable events. app.js hands in its helpers and calls these.
"use strict";

window.FlotillaOperator = function (ui) {
  const { h, card, table, badge, unavailable, attempt, api, streamed, when, short, money, duration, enc } = ui;

  const ID_KEYS = new Set(["message_id", "item_id", "id", "request_id", "root_id", "reply_to", "run_id", "turn_id", "unit"]);
  const TRACEABLE = new Set(["message_id", "item_id", "request_id", "root_id", "reply_to"]);
  const AGENT_KEYS = new Set(["agent", "peer", "sender", "recipient", "to", "from"]);

  function shortId(value) {
    const text = String(value);
    return text.length > 12 ? text.slice(0, 8) : text;
  }

  function traceLink(id) {
    return h("a", { class: "id-link", href: `#/trace/${enc(id)}`, title: `trace ${id}` }, shortId(id));
  }

  function agentLink(name) {
    return h("a", { class: "agent-ref", href: `#/agent/${enc(name)}` }, name);
  }

  // One event's data as readable parts: ids shortened (and linked to their trace), agents linked.
  function eventData(data, agents) {
    const parts = [];
    for (const [key, value] of Object.entries(data || {})) {
      if (value === null || value === undefined || value === "") continue;
      let shown;
      if (TRACEABLE.has(key) && typeof value === "string") shown = traceLink(value);
      else if (ID_KEYS.has(key) && typeof value === "string") shown = h("span", { class: "id", title: value }, shortId(value));
      else if (AGENT_KEYS.has(key) && agents.has(String(value))) shown = agentLink(String(value));
      else if (key === "fraction" && typeof value === "number") shown = `${value} (${Math.round(value * 100)}%)`;
      else if (typeof value === "number" && !Number.isInteger(value)) shown = String(Number(value.toPrecision(4)));
      else shown = short(value, 60);
      parts.push(h("span", { class: "kv" }, h("span", { class: "k" }, key), "=", shown));
      if (parts.length >= 5) break;
    }
    return parts;
  }

  // ------------------------------------------------------------------ actions

  function actionBar(agent, onDone) {
    const status = h("span", { class: "action-status", role: "status" });
    const say = (text, ok) => {
      status.className = `action-status ${ok ? "ok-text" : "error-text"}`;
      status.textContent = text;
    };
    const act = (label, method, path, body, describe) =>
      h(
        "button",
        {
          class: "action",
          "data-action": label.toLowerCase().replace(/ /g, "-"),
          onclick: async (e) => {
            e.target.disabled = true;
            try {
              const result = await api(path, { method, body: body ? JSON.stringify(body()) : undefined });
              say(describe(result), true);
              if (onDone) onDone();
            } catch (error) {
              say(`${label} refused: ${error.message}`, false);
            } finally {
              e.target.disabled = false;
            }
          },
        },
        label
      );
    const base = `/api/v1/agents/${enc(agent)}`;
    const text = h("textarea", { class: "message-text", rows: 2, placeholder: `Message to ${agent}`, "aria-label": "Message" });
    const reply = h("pre", { class: "reply", hidden: true, "aria-live": "polite" });
    // The reply as the agent writes it; what holds it up (a hold, an approval) in the status line.
    const onEvent = (name, data) => {
      if (name === "queued") {
        status.className = "action-status ok-text";
        status.replaceChildren("Queued as ", traceLink(data.item_id));
      } else if (name === "waiting") {
        say(data.message, false);
      } else if (name === "delta") {
        reply.hidden = false;
        reply.textContent += data.delta;
      } else if (name === "done") {
        if (!reply.textContent && data.text) reply.textContent = data.text;
        reply.hidden = !reply.textContent;
        if (data.ok === false) say(`The agent failed: ${data.error || "no reason given"}`, false);
        else say("Answered", true);
      } else if (name === "error") {
        say(data.message || "no reply", false);
      }
    };
    const send = h(
      "form",
      {
        class: "send-form",
        onsubmit: async (e) => {
          e.preventDefault();
          if (!text.value.trim()) return;
          const message = text.value;
          text.value = "";
          reply.textContent = "";
          reply.hidden = true;
          try {
            await streamed(`${base}/messages?stream=true`, { text: message }, onEvent);
          } catch (error) {
            say(`Send refused: ${error.message}`, false);
          }
        },
      },
      text,
      h("button", { type: "submit", class: "primary" }, "Send")
    );
    const done = (r) => r.done || `${r.action} done`;
    return h(
      "div",
      { class: "actions" },
      send,
      reply,
      h(
        "div",
        { class: "action-row" },
        act("Run heartbeat", "POST", `${base}/heartbeat`, null, (r) => `Heartbeat: ${r.outcome}${r.skipped ? ` (${r.skipped})` : ""}`),
        act("Restart", "POST", `${base}/restart`, null, done),
        act("Pause", "POST", `${base}/pause`, null, done),
        act("Resume", "POST", `${base}/resume`, null, done),
        status
      )
    );
  }

  // ------------------------------------------------------------------ transcript

  function turnHead(turn) {
    const run = turn.run;
    const facts = run
      ? [
          badge(run.outcome),
          h("span", {}, run.trigger),
          run.model ? h("span", { class: "mono" }, run.model) : "",
          h("span", { title: "tokens in / out" }, `${run.tokens_in} → ${run.tokens_out} tok`),
          h("span", {}, money(run.cost_usd)),
          h("span", {}, `${Number(run.duration_s).toFixed(1)} s`),
        ]
      : [badge("running", "info")];
    return h(
      "div",
      { class: "turn-head" },
      h("time", {}, when(turn.started_at)),
      facts,
      turn.item_id ? h("span", {}, "item ", traceLink(turn.item_id)) : ""
    );
  }

  // Where a call ran, when not inside the agent (the run's tool_sources): e.g. a host tool.
  const SOURCE_LABELS = { host: "host tool", orchestrator_mcp: "MCP via orchestrator", mcp: "MCP", peer: "peer" };

  function messageBlock(message, sources) {
    const role = message.role;
    const body = [];
    if (message.content) body.push(h("pre", { class: "msg-text" }, message.content + (message.truncated ? " …" : "")));
    for (const call of message.tool_calls || []) {
      body.push(
        h(
          "div",
          { class: "tool-call" },
          h("span", { class: "tool-name" }, `⚙ ${call.name}`),
          sources && sources[call.name] ? badge(SOURCE_LABELS[sources[call.name]] || sources[call.name], "info") : "",
          h("pre", { class: "tool-args" }, call.arguments + (call.truncated ? " …" : ""))
        )
      );
    }
    const label = role === "tool" ? `result of ${message.name || "tool"}` : role;
    return h("div", { class: `msg msg-${role}` }, h("div", { class: "msg-role" }, label), body);
  }

  function requestMark(mark) {
    const d = mark.data || {};
    const text =
      mark.type === "http.refused"
        ? `✗ ${d.method} ${short(d.url, 80)} refused: ${short(d.rule, 100)}`
        : `⇄ ${d.method} ${short(d.url, 80)} → ${d.status == null ? `failed: ${short(d.detail, 80)}` : d.status} · ${d.bytes} bytes · ${d.duration_s} s`;
    return h("div", { class: "mark mark-http" }, `${text} · ${when(mark.at)}`);
  }

  // A browser action the orchestrator ran for the agent; a screenshot is shown as taken.
  function browserMark(agent, mark) {
    const d = mark.data || {};
    if (mark.type === "web_search.ran") {
      return h("div", { class: "mark mark-http" }, `⌕ search ${short(d.query, 80)} → ${d.ok ? `${d.results} results` : `failed: ${short(d.detail || d.refused, 100)}`} · ${when(mark.at)}`);
    }
    const outcome = mark.type === "browser.refused" ? `refused: ${short(d.rule, 100)}` : d.ok ? `${d.requests} page requests` : `failed: ${short(d.detail, 100)}`;
    const line = h("div", {}, `◧ ${d.tool} ${short(d.url || "", 80)} · ${outcome} · ${when(mark.at)}`);
    const shot = d.file ? h("img", { class: "screenshot", alt: `screenshot ${d.file}`, loading: "lazy", src: `/api/v1/agents/${enc(agent)}/screenshots/${enc(String(d.file).replace(/^screenshots\//, ""))}${d.version ? `?version=${enc(d.version)}` : ""}` }) : "";
    return h("div", { class: "mark mark-http" }, line, shot);
  }

  function markBlock(agent, mark) {
    if (String(mark.type).startsWith("browser.") || mark.type === "web_search.ran") return browserMark(agent, mark);
    if (String(mark.type).startsWith("http.")) return requestMark(mark);
    const kind = String(mark.type).includes("compaction") ? "compaction" : "flush";
    const detail = Object.entries(mark.data || {})
      .slice(0, 3)
      .map(([k, v]) => `${k}=${short(v, 30)}`)
      .join(" ");
    return h("div", { class: `mark mark-${kind}` }, `${kind === "compaction" ? "⟲ context compacted" : "⤓ memory flushed"} · ${when(mark.at)} ${detail}`);
  }

  async function transcriptTab(agent, box) {
    box.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    const result = await attempt(`/api/v1/agents/${enc(agent)}/history?limit=20`);
    if (result.error) return box.replaceChildren(unavailable("Transcript", result.error));
    const turns = result.data.turns || [];
    if (!turns.length) return box.replaceChildren(h("p", { class: "muted" }, "No turns yet."));
    box.replaceChildren(
      result.data.earlier ? h("p", { class: "muted small" }, "Older turns exist (flotilla history shows more).") : "",
      h(
        "ol",
        { class: "transcript" },
        turns
          .slice()
          .reverse()
          .map((turn) => h("li", { class: "turn" }, turnHead(turn), (turn.marks || []).map((mark) => markBlock(agent, mark)), (turn.messages || []).map((message) => messageBlock(message, turn.run ? turn.run.tool_sources : null))))
      )
    );
  }

  // ------------------------------------------------------------------ trace timeline

  function traceView(view, reference) {
    const input = h("input", { type: "search", value: reference || "", placeholder: "message or item id (a unique prefix)", "aria-label": "Trace id" });
    const box = h("div", { class: "trace-box" });
    const form = h(
      "form",
      {
        class: "search-row",
        onsubmit: (e) => {
          e.preventDefault();
          if (input.value.trim()) location.hash = `#/trace/${enc(input.value.trim())}`;
        },
      },
      input,
      h("button", { type: "submit" }, "Trace")
    );
    view.append(h("div", { class: "agent-head" }, h("h1", {}, "Trace")), card("Request", h("div", {}, form, box)));
    if (reference) loadTrace(reference, box);
  }

  async function loadTrace(reference, box) {
    box.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    const result = await attempt(`/api/v1/traces/${enc(reference)}`);
    if (result.error) {
      const candidates = (result.error.details || []).map((c) => h("li", {}, traceLink(typeof c === "string" ? c : c.id || JSON.stringify(c))));
      return box.replaceChildren(unavailable("Trace", result.error), h("p", { class: "muted" }, result.error.message), candidates.length ? h("ul", {}, candidates) : "");
    }
    box.replaceChildren(timeline(result.data));
  }

  function timeline(trace) {
    const steps = trace.steps || [];
    const times = steps.flatMap((s) => [s.created_at, s.claimed_at, s.finished_at, s.run && s.run.started_at]).filter(Boolean).map((t) => Date.parse(t));
    const start = Math.min(...times);
    const span = Math.max(1, Math.max(...times) - start);
    const pct = (t) => `${(((Date.parse(t) - start) / span) * 100).toFixed(2)}%`;
    const width = (a, b) => `${Math.max(0.6, ((Date.parse(b) - Date.parse(a)) / span) * 100).toFixed(2)}%`;
    const rows = steps.map((step) => {
      const end = step.finished_at || step.claimed_at || step.created_at;
      const bars = [];
      if (step.claimed_at) bars.push(h("span", { class: "bar bar-queued", style: `left:${pct(step.created_at)};width:${width(step.created_at, step.claimed_at)}`, title: `queued ${duration(step.queued_s)}` }));
      bars.push(
        h("span", {
          class: `bar bar-${["failed", "dead", "error"].includes(step.state) ? "bad" : "work"}`,
          style: `left:${pct(step.claimed_at || step.created_at)};width:${width(step.claimed_at || step.created_at, end)}`,
          title: `${step.state} ${step.took_s !== null && step.took_s !== undefined ? step.took_s.toFixed(2) + " s" : ""}`,
        })
      );
      return h(
        "li",
        { class: "trace-step", style: `--depth:${step.depth}` },
        h(
          "div",
          { class: "step-label" },
          h("span", { class: "step-kind" }, String(step.kind).replace(/_/g, " ")),
          " ",
          h("span", {}, step.sender, " → ", agentLink(step.recipient)),
          step.operation ? h("span", { class: "muted" }, ` ${step.operation}`) : "",
          " ",
          badge(step.state),
          h("span", { class: "muted small" }, ` ${shortId(step.id)} · ${step.took_s !== null && step.took_s !== undefined ? step.took_s.toFixed(2) + " s" : "open"}`),
          step.run ? h("span", { class: "muted small" }, ` · ${step.run.model || ""} ${step.run.tokens_in}→${step.run.tokens_out} tok ${money(step.run.cost_usd)}`) : "",
          step.error ? h("div", { class: "error-text" }, step.error) : ""
        ),
        h("div", { class: "track" }, bars)
      );
    });
    return h(
      "div",
      { class: "timeline" },
      h("p", {}, "Path: ", (trace.path || []).flatMap((a, i) => (i ? [" → ", agentLink(a)] : [agentLink(a)])), trace.took_s !== null && trace.took_s !== undefined ? ` · ${trace.took_s.toFixed(2)} s in all` : ""),
      h("ol", { class: "trace-steps" }, rows),
      h("p", { class: "muted small" }, h("span", { class: "swatch bar-queued" }), "queued ", h("span", { class: "swatch bar-work" }, ""), "worked")
    );
  }

  // ------------------------------------------------------------------ memory browser

  function memoryTab(agent, box) {
    const status = h("select", { name: "status", "aria-label": "Status" }, ["active", "superseded", "forgotten", "all"].map((s) => h("option", { value: s }, s)));
    const source = h("select", { name: "source", "aria-label": "Source" }, ["", "user_stated", "operator", "agent", "extracted", "inferred"].map((s) => h("option", { value: s }, s || "any source")));
    const category = h("input", { name: "category", placeholder: "category", "aria-label": "Category" });
    const scope = h("input", { name: "scope", placeholder: "scope: shared or person:…", "aria-label": "Scope" });
    const list = h("div", { class: "fact-list" });
    const contradictions = h("div", { class: "contradictions" });
    const base = `/api/v1/agents/${enc(agent)}/memory`;
    const load = async () => {
      list.replaceChildren(h("p", { class: "muted" }, "Loading…"));
      let path = `${base}/facts?status=${enc(status.value)}&limit=200`;
      if (category.value.trim()) path += `&category=${enc(category.value.trim())}`;
      if (source.value) path += `&source=${enc(source.value)}`;
      const wanted = scope.value.trim();
      if (wanted) path += `&scope=${enc(wanted === "shared" ? "" : wanted)}`;
      const result = await attempt(path);
      if (result.error) return list.replaceChildren(unavailable("Memory", result.error));
      list.replaceChildren(factTable(result.data.facts || [], base, load));
    };
    const loadContradictions = async () => {
      const result = await attempt(`${base}/contradictions?status=pending`);
      if (result.error) return contradictions.replaceChildren(unavailable("Contradictions", result.error));
      contradictions.replaceChildren(contradictionList(result.data.contradictions || [], base, () => (load(), loadContradictions())));
    };
    const filters = h(
      "form",
      { class: "filters", onsubmit: (e) => (e.preventDefault(), load()) },
      status,
      source,
      category,
      scope,
      h("button", { type: "submit" }, "Filter")
    );
    status.addEventListener("change", load);
    source.addEventListener("change", load);
    box.replaceChildren(card("Facts", h("div", {}, filters, list)), card("Contradictions", contradictions));
    load();
    loadContradictions();
  }

  function factTable(facts, base, reload) {
    const columns = [
      { title: "#", num: true, cell: (f) => String(f.id) },
      { title: "Fact", wide: true, cell: (f) => factText(f, base, reload) },
      { title: "Category", cell: (f) => f.category },
      { title: "Source", cell: (f) => h("span", { class: "muted" }, f.source) },
      { title: "Scope", cell: (f) => h("span", { class: "muted" }, f.scope || "shared") },
      { title: "Status", cell: (f) => badge(f.status, f.status === "active" ? "ok" : "muted") },
      { title: "Updated", nowrap: true, cell: (f) => when(f.updated_at) },
      { title: "", nowrap: true, cell: (f) => (f.status === "active" ? factButtons(f, base, reload) : "") },
    ];
    return table(columns, facts, "No facts match.");
  }

  function factText(fact, base, reload) {
    const node = h("div", { class: "fact-text", "data-fact": fact.id }, fact.text);
    node.edit = () => {
      const area = h("textarea", { class: "fact-editor", rows: 2 }, fact.text);
      const message = h("span", {});
      const save = async () => {
        try {
          await api(`${base}/facts/${fact.id}`, { method: "PUT", body: JSON.stringify({ text: area.value, category: fact.category }) });
          reload();
        } catch (error) {
          message.className = "error-text";
          message.textContent = error.message;
        }
      };
      node.replaceChildren(area, h("div", { class: "edit-bar" }, h("button", { class: "primary", onclick: save }, "Save fact"), h("button", { onclick: reload }, "Cancel"), message));
    };
    return node;
  }

  function factButtons(fact, base, reload) {
    const forget = h("button", {
      class: "danger",
      onclick: async (e) => {
        if (e.target.dataset.armed !== "1") {
          e.target.dataset.armed = "1";
          e.target.textContent = "Confirm forget";
          return;
        }
        try {
          await api(`${base}/facts/${fact.id}`, { method: "DELETE" });
          reload();
        } catch (error) {
          e.target.textContent = `refused: ${error.message}`;
        }
      },
    }, "Forget");
    const edit = h("button", { onclick: (e) => e.target.closest("tr").querySelector(".fact-text").edit() }, "Edit");
    return h("span", { class: "row-buttons" }, edit, forget);
  }

  function contradictionList(items, base, reload) {
    if (!items.length) return h("p", { class: "muted" }, "No contradictions waiting.");
    const settle = (item, keep) =>
      h(
        "button",
        {
          onclick: async (e) => {
            try {
              await api(`${base}/contradictions/${item.id}/resolve`, { method: "POST", body: JSON.stringify({ keep }) });
              reload();
            } catch (error) {
              e.target.closest("li").append(h("p", { class: "error-text" }, `Refused: ${error.message}`));
            }
          },
        },
        keep === "old" ? "Keep stored" : "Take new"
      );
    return h(
      "ul",
      { class: "contradiction-items" },
      items.map((item) =>
        h(
          "li",
          { "data-contradiction": item.id },
          h("div", {}, h("span", { class: "muted" }, "stored: "), item.fact_text, h("span", { class: "muted small" }, ` (${item.fact_source})`)),
          h("div", {}, h("span", { class: "muted" }, "new: "), item.text, h("span", { class: "muted small" }, ` (${item.source})`)),
          h("div", { class: "row-buttons" }, settle(item, "old"), settle(item, "new"))
        )
      )
    );
  }

  // ------------------------------------------------------------------ budgets

  function gaugeRow(gauge) {
    const pct = Math.min(100, gauge.fraction * 100);
    const level = gauge.fraction >= 1 ? "bad" : gauge.fraction >= 0.8 ? "warn" : "ok";
    const amount = (v) => (gauge.unit === "usd" ? money(v) : `${Math.round(v).toLocaleString()} tok`);
    const resets = new Date(gauge.resets_at);
    return h(
      "div",
      { class: `gauge gauge-${level}`, "data-agent": gauge.agent || "fleet" },
      h("div", { class: "gauge-label" }, gauge.agent ? agentLink(gauge.agent) : h("strong", {}, "fleet"), ` ${gauge.period} ${gauge.unit === "usd" ? "spend" : "tokens"}`),
      h("div", { class: "gauge-track" }, h("span", { class: `fill fill-${level}`, style: `width:${pct.toFixed(1)}%` })),
      h("div", { class: "gauge-figures" }, `${amount(gauge.spent)} of ${amount(gauge.limit)} · ${Math.round(gauge.fraction * 100)}% · resets ${when(resets.toISOString())} (in ${duration((resets - Date.now()) / 1000)})`)
    );
  }

  async function budgetCard(box, agent) {
    const result = await attempt("/api/v1/budgets");
    if (result.error) return box.replaceChildren(unavailable("Budgets", result.error));
    const gauges = result.data.gauges.filter((g) => (agent ? g.agent === agent || g.agent === null : true));
    box.replaceChildren(gauges.length ? h("div", { class: "gauges" }, gauges.map(gaugeRow)) : h("p", { class: "muted" }, "No budget caps configured."));
  }

  const REASONS = { budget_blocked: "budget spent", dead_letters: "dead letters", crash_loop: "crash loop", unhealthy: "unhealthy" };

  async function attention() {
    return attempt("/api/v1/attention");
  }

  function attentionList(data) {
    if (!data || !data.agents.length) return "";
    return h(
      "ul",
      { class: "attention" },
      data.agents.map((a) => h("li", {}, agentLink(a.agent), " ", a.reasons.map((r) => badge(REASONS[r] || r, "bad"))))
    );
  }

  // ------------------------------------------------------------------ events of one agent

  async function eventsTab(agent, box, agents) {
    const result = await attempt(`/api/v1/events/recent?agent=${enc(agent)}&limit=100`);
    if (result.error) return box.replaceChildren(unavailable("Events", result.error));
    const rows = result.data.slice().reverse();
    const columns = [
      { title: "At", nowrap: true, cell: (e) => when(e.at) },
      { title: "Event", nowrap: true, cell: (e) => h("span", { class: `etype etype-${String(e.type).split(".")[0]}` }, e.type) },
      { title: "Details", wide: true, cell: (e) => h("span", { class: "event-data" }, eventData(e.data, agents)) },
    ];
    box.replaceChildren(table(columns, rows, "No events for this agent."));
  }

  return { actionBar, transcriptTab, traceView, memoryTab, budgetCard, attention, attentionList, eventsTab, eventData, traceLink };
};
