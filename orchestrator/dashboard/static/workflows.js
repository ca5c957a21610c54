// The dashboard's workflow runs: the latest runs, each drawn as its graph of steps (one column
// per depth of depends_on, each step a badge of its state), with Cancel and Retry. A step that
// waits for approval is decided in the approvals panel, where its approval item is listed.
"use strict";

window.FlotillaWorkflows = function (ui) {
  const { h, table, badge, unavailable, attempt, api, when, money, enc } = ui;

  const TONES = {
    done: "ok", succeeded: "ok", queued: "info", running: "info", approval: "warn", retry_wait: "warn",
    pending: "muted", standby: "muted", skipped: "muted", failed: "bad", cancelled: "bad",
  };

  // Columns of the graph: a step sits one column right of its deepest dependency.
  function depths(definition) {
    const found = {};
    const depth = (name, seen) => {
      if (found[name] !== undefined) return found[name];
      const needs = (definition[name] || []).filter((d) => !seen.has(d));
      found[name] = needs.length ? 1 + Math.max(...needs.map((d) => depth(d, new Set([...seen, d])))) : 0;
      return found[name];
    };
    Object.keys(definition).forEach((name) => depth(name, new Set([name])));
    return found;
  }

  function graph(run, definitions) {
    const definition = definitions[run.workflow] || {};
    const level = depths(definition);
    const columns = [];
    for (const step of run.steps) {
      const at = level[step.step] || 0;
      (columns[at] = columns[at] || []).push(step);
    }
    return h(
      "div",
      { class: "workflow-graph", "data-run": run.id },
      columns.filter(Boolean).flatMap((steps, index) => [
        index ? h("span", { class: "muted", "aria-hidden": "true" }, "→") : "",
        h(
          "div",
          { class: "workflow-column" },
          steps.map((s) =>
            h("span", { class: "workflow-step", "data-step": s.step, title: s.error || (s.output ? JSON.stringify(s.output) : s.state) },
              `${s.step} `, badge(s.state, TONES[s.state] || "muted"))
          )
        ),
      ])
    );
  }

  function actions(run, reload) {
    const status = h("span", { class: "approval-status", role: "status" });
    const act = (verb) => async (e) => {
      e.target.disabled = true;
      try {
        await api(`/api/v1/workflow-runs/${enc(run.id)}/${verb}`, { method: "POST" });
      } catch (error) {
        status.className = "approval-status error-text";
        status.textContent = `${verb} refused: ${error.message}`;
      }
      reload();
    };
    const buttons = [];
    if (run.state === "running") buttons.push(h("button", { class: "danger", "data-act": "cancel", onclick: act("cancel") }, "Cancel"));
    if (run.state === "failed" || run.state === "cancelled") buttons.push(h("button", { "data-act": "retry", onclick: act("retry") }, "Retry"));
    return h("div", { class: "approval-actions" }, buttons, status);
  }

  const columns = (definitions, reload) => [
    { title: "Run", nowrap: true, cell: (r) => h("span", { class: "mono", title: r.id }, `${r.workflow} · ${r.id.slice(0, 11)}`) },
    { title: "State", nowrap: true, cell: (r) => h("span", { title: r.error || "" }, badge(r.state, TONES[r.state])) },
    { title: "Steps", wide: true, cell: (r) => graph(r, definitions) },
    { title: "Cost", num: true, nowrap: true, cell: (r) => money(r.cost_usd) },
    { title: "Started", nowrap: true, cell: (r) => when(r.created_at) },
    { title: "", nowrap: true, cell: (r) => actions(r, reload) },
  ];

  // Fills `box` with the latest runs; returns how many are shown (null when unavailable).
  async function workflowsPanel(box) {
    const reload = () => workflowsPanel(box);
    const [runs, declared] = await Promise.all([attempt("/api/v1/workflow-runs?limit=20"), attempt("/api/v1/workflows")]);
    if (runs.error || declared.error) {
      box.replaceChildren(unavailable("Workflow runs", runs.error || declared.error));
      return null;
    }
    const definitions = {};
    for (const w of declared.data || []) definitions[w.name] = w.depends_on;
    const items = runs.data || [];
    box.replaceChildren(table(columns(definitions, reload), items, "No workflow has run yet."));
    return items.length;
  }

  return { workflowsPanel };
};
