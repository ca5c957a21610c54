// The dashboard's approvals panel: tool calls waiting for an operator, with Approve and Deny.
// Decisions go through the same CSRF-guarded API calls as every other action of the page; the
// panel is read again on each approval.requested / approval.decided event, so an item decided
// elsewhere (the CLI, another browser, its timeout) leaves the list.
"use strict";

window.FlotillaApprovals = function (ui) {
  const { h, table, unavailable, attempt, api, when, short, duration, enc } = ui;

  function age(iso) {
    const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
    return duration(Math.max(0, seconds));
  }

  // What the operator decided here last, shown above the list once the item has left it.
  const said = new Map();

  function decision(item, reload) {
    const reason = h("input", { class: "approval-reason", placeholder: "Reason (optional)", maxlength: "2000", "aria-label": `Reason for ${item.id}` });
    const status = h("span", { class: "approval-status", role: "status" });
    const decide = (verb) => async (e) => {
      const buttons = e.target.parentNode.querySelectorAll("button");
      for (const b of buttons) b.disabled = true;
      try {
        const decided = await api(`/api/v1/approvals/${enc(item.id)}/${verb}`, {
          method: "POST",
          body: JSON.stringify({ reason: reason.value }),
        });
        said.set(item.id, `${item.tool} of ${item.agent}: ${decided.state}`);
        reload();
      } catch (error) {
        status.className = "approval-status error-text";
        status.textContent = `${verb === "approve" ? "Approve" : "Deny"} refused: ${error.message}`;
        for (const b of buttons) b.disabled = false;
        reload();
      }
    };
    return h(
      "div",
      { class: "approval-actions" },
      reason,
      h("button", { class: "primary", "data-decide": "approve", onclick: decide("approve") }, "Approve"),
      h("button", { class: "danger", "data-decide": "deny", onclick: decide("deny") }, "Deny"),
      status
    );
  }

  const columns = (reload) => [
    { title: "Agent", nowrap: true, cell: (a) => h("a", { href: `#/agent/${enc(a.agent)}`, class: "agent-ref" }, a.agent) },
    { title: "Tool", nowrap: true, cell: (a) => h("span", { class: "mono" }, a.tool) },
    { title: "Arguments", wide: true, cell: (a) => h("code", { class: "approval-args", title: JSON.stringify(a.arguments, null, 2) }, short(a.arguments, 160)) },
    { title: "Age", num: true, nowrap: true, cell: (a) => h("span", { title: `asked ${when(a.created_at)}, denied at ${when(a.expires_at)} if undecided` }, age(a.created_at)) },
    { title: "Decision", nowrap: true, cell: (a) => decision(a, reload) },
  ];

  // Fills `box` with the pending items; returns how many there are (null when unavailable).
  async function approvalsPanel(box) {
    const reload = () => approvalsPanel(box);
    const result = await attempt("/api/v1/approvals?state=pending");
    if (result.error) {
      box.replaceChildren(unavailable("Approvals", result.error));
      return null;
    }
    const items = result.data || [];
    const rows = table(columns(reload), items, "No tool call waits for approval.");
    for (const [index, row] of [...rows.querySelectorAll("tbody tr")].entries()) {
      row.dataset.approval = items[index].id;
      row.classList.add("approval");
    }
    const notes = [...said.values()].slice(-3).map((text) => h("p", { class: "approval-decided ok-text" }, text));
    box.replaceChildren(...notes, rows);
    return items.length;
  }

  return { approvalsPanel };
};
